"""`make release` never destroys a student's work: it refuses, names the file, and `--force` backs it up first."""

from __future__ import annotations

from datetime import UTC, datetime

import nbformat
import pytest

from grader.authoring import release, release_guard
from grader.course import ROOT, student_notebook
from grader.errors import NotReleased

LESSON = "03-parallel-heads"


def test_a_notebook_is_work_unless_it_is_the_release_it_would_replace(tmp_path):
    releases, notebook = tmp_path / "term" / "releases.json", tmp_path / "lessons" / LESSON / f"{LESSON}.ipynb"
    assert not release_guard.is_work(notebook, releases)  # nothing there yet
    notebook.parent.mkdir(parents=True)
    notebook.write_text('{"released": true}')
    assert release_guard.is_work(notebook, releases)  # not recorded, not in git: someone's
    release_guard.record(releases, notebook)
    assert not release_guard.is_work(notebook, releases)
    notebook.write_text('{"released": true, "answered": true}')
    assert release_guard.is_work(notebook, releases)


def test_the_committed_release_in_a_clone_may_be_replaced():
    assert not release_guard.is_work(student_notebook(LESSON), ROOT / "no-such-term" / "releases.json")


def course(root):
    root.mkdir()
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa\nload_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n")
    return root


def test_release_refuses_to_replace_an_answered_notebook_and_names_it_and_the_way_out(tmp_path):
    root = course(tmp_path / "course")
    answered = root / "lessons" / LESSON / f"{LESSON}.ipynb"
    answered.parent.mkdir(parents=True)
    answered.write_text('{"my": "answers"}')
    with pytest.raises(NotReleased) as refused:
        release.main(lessons=[LESSON], course=root)
    assert str(answered) in str(refused.value) and "FORCE=1" in str(refused.value) and "backup" in str(refused.value)
    assert answered.read_text() == '{"my": "answers"}'


def test_force_backs_up_the_notebook_and_its_checkpoint_outside_the_lesson_folder(tmp_path):
    notebook = tmp_path / "lessons" / LESSON / f"{LESSON}.ipynb"
    checkpoint = notebook.parent / ".ipynb_checkpoints" / f"{LESSON}-checkpoint.ipynb"
    checkpoint.parent.mkdir(parents=True)
    notebook.write_text("answers")
    checkpoint.write_text("older answers")
    copies = release_guard.backup(notebook, now=datetime(2026, 12, 3, 9, 5, tzinfo=UTC))
    assert [c.name for c in copies] == [f"{LESSON}.backup-20261203-090500.ipynb",
                                        f"{LESSON}.backup-20261203-090500-checkpoint.ipynb"]
    assert [c.read_text() for c in copies] == ["answers", "older answers"]
    assert all(c.parent == tmp_path / "lessons" for c in copies)


def test_without_git_the_lesson_notebook_is_compared_with_a_release_made_in_memory(tmp_path):
    """A zip download of the course has no .git and no record: its untouched lesson notebook is the release a
    release of solutions/ makes now, so it may be replaced; one with an answer typed in is someone's work."""
    from functools import partial

    from grader.authoring.release_in_memory import build_release
    from grader.cell_roles import cells_by_id

    copy = tmp_path / "zip download" / "lessons" / LESSON / f"{LESSON}.ipynb"  # no git above it
    copy.parent.mkdir(parents=True)
    copy.write_bytes(student_notebook(LESSON).read_bytes())
    releases, released = tmp_path / "term" / "releases.json", partial(build_release, LESSON)
    assert release_guard.is_work(copy, releases)  # without the comparison: refused, as before
    assert not release_guard.is_work(copy, releases, released=released)
    nb = nbformat.read(copy, as_version=4)
    answer = next(cell for cell in cells_by_id(nb).values() if cell.metadata["nbgrader"].get("solution"))
    answer.source += "\n# my answer"
    nbformat.write(nb, copy)
    assert release_guard.is_work(copy, releases, released=released)
