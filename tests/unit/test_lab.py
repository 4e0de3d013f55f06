"""`make lab`: JupyterLab on lessons/ with the student configuration, as root and as anyone else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from grader.student import lab
from grader.student.layout import JUPYTER_CONFIG, LESSONS, ROOT


def test_make_lab_runs_the_course_command():
    recipe = subprocess.run(["make", "-n", "-o", ".venv/.installed", "lab"], cwd=ROOT, text=True,
                            capture_output=True, check=True).stdout
    assert re.search(r"python -m grader lab\b", recipe), f"`make lab` no longer runs `python -m grader lab`:\n{recipe}"


def test_as_root_jupyterlab_is_allowed_to_start_and_otherwise_it_is_not_asked_to():
    as_root = lab.command(as_root=True)
    assert "--allow-root" in as_root and f"--ServerApp.root_dir={LESSONS}" in as_root
    assert "--allow-root" not in lab.command(as_root=False)
    assert lab.command(as_root=True, jupyter_args=["--allow-root"]).count("--allow-root") == 1


def test_the_student_configuration_comes_first_and_no_figure_backend_is_forced():
    env = lab.environment({"JUPYTER_CONFIG_PATH": "/elsewhere", "MPLBACKEND": "Agg"})
    assert env["JUPYTER_CONFIG_PATH"].split(":") == [str(JUPYTER_CONFIG), "/elsewhere"]
    assert "MPLBACKEND" not in env
    assert env["PYTHONPATH"].split(":")[0] == str(ROOT)  # kernels import lesson_helpers.py from the course root


def test_the_course_settings_turn_the_news_question_off():
    """A fresh JupyterLab asks whether to fetch Jupyter news; the course's settings answer "never"."""
    import json

    import jupyterlab

    assert f"--LabApp.app_settings_dir={lab.LAB_SETTINGS}" in lab.command()
    overrides = json.loads((lab.LAB_SETTINGS / "overrides.json").read_text())
    schemas = Path(jupyterlab.__file__).parent / "schemas"
    for plugin, values in overrides.items():
        package, name = plugin.split(":")
        schema = json.loads((schemas / package / f"{name}.json").read_text())["properties"]
        for key, value in values.items():
            allowed = [choice["const"] for choice in schema[key].get("oneOf", [])] or [True, False]
            assert value in allowed, f"{plugin} {key}: {value!r} is not one of {allowed}"
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
