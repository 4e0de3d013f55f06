"""The hub's configuration files as JupyterHub and nbgrader read them, and what hub-release publishes."""

from __future__ import annotations

import json
import stat
from types import SimpleNamespace

import pytest
from traitlets.config import PyFileConfigLoader

from grader.hub import release
from grader.student.layout import LESSON_HELPERS

HUB = release.STUDENT_CONFIG.parent


def hub_config(monkeypatch, tmp_path, **env: str):
    for name, value in {"ATTENTION_INSTRUCTORS": "hopper", "ATTENTION_STUDENTS": "ada,grace",
                        "ATTENTION_COURSE": str(tmp_path / "course"), "ATTENTION_SHARED": str(tmp_path / "shared"),
                        "ATTENTION_EXCHANGE": str(tmp_path / "exchange"), "ATTENTION_HUB_STATE": str(tmp_path),
                        **env}.items():
        monkeypatch.setenv(name, value)
    return PyFileConfigLoader("jupyterhub_config.py", path=str(HUB)).load_config()


def spawner(name: str, *groups: str):
    return SimpleNamespace(user=SimpleNamespace(name=name, groups=[SimpleNamespace(name=g) for g in groups]),
                           environment={"PYTHONPATH": "shared"})


def test_the_hub_config_lets_in_the_two_lists_only_and_gives_each_role_its_own_jupyter_config(monkeypatch, tmp_path):
    c = hub_config(monkeypatch, tmp_path)
    assert c.Authenticator.allowed_users == {"hopper", "ada", "grace"}
    assert c.JupyterHub.load_groups == {"instructors": {"users": ["hopper"]}, "students": {"users": ["ada", "grace"]}}
    assert c.JupyterHub.spawner_class == "localprocess" and c.JupyterHub.authenticator_class == "pam"
    hook = c.Spawner.pre_spawn_hook
    with pytest.raises(RuntimeError, match="not published yet"):
        hook(spawner("ada", "students"))
    release.publish(tmp_path / "shared")
    student = spawner("ada", "students")
    hook(student)
    assert student.environment["JUPYTER_CONFIG_PATH"] == str(tmp_path / "shared" / "jupyter")
    teacher = spawner("hopper", "instructors")
    hook(teacher)
    assert teacher.environment["JUPYTER_CONFIG_PATH"] == str(HUB / "instructor")
    assert teacher.environment["PYTHONPATH"].split(":")[0] == str(tmp_path / "course")
    with pytest.raises(PermissionError):
        hook(spawner("mallory"))


def test_students_get_the_assignments_panel_and_validate_and_no_instructor_tool():
    server = json.loads((release.STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions == {"nbgrader.server_extensions.formgrader": False,
                          "nbgrader.server_extensions.course_list": False,
                          "nbgrader.server_extensions.assignment_list": True,
                          "nbgrader.server_extensions.validate_assignment": True}
    lab = json.loads((release.STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    assert {name for name, off in lab.items() if off} == {"@jupyter/nbgrader:formgrader",
                                                          "@jupyter/nbgrader:create-assignment",
                                                          "@jupyter/nbgrader:course-list"}


def test_publish_writes_the_helpers_and_the_student_config_readable_by_all(tmp_path):
    shared = tmp_path / "shared"
    release.publish(shared)
    release.publish(shared)  # again, over the first: the same files
    assert (shared / "lesson_helpers.py").read_bytes() == LESSON_HELPERS.read_bytes()
    published = sorted(p.relative_to(shared / "jupyter") for p in (shared / "jupyter").rglob("*") if p.is_file())
    expected = sorted(p.relative_to(release.STUDENT_CONFIG) for p in release.STUDENT_CONFIG.rglob("*") if p.is_file())
    assert published == expected
    for path in shared.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))
    assert not list(shared.rglob(".*.partial"))
