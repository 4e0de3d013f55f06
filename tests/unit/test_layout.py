"""grader.layout: grading's data at the course's root, where nbgrader keeps it, ignored by git and never
published; a course with data still in the old grader/state/ is refused, with the command that moves it."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.coursedir import CourseDirectory

from grader import __main__ as cli
from grader.authoring import dist
from grader.course import LESSONS, ROOT, nbgrader_config
from grader.errors import OldGradingData
from grader.layout import GRADING_DATA, OLD_PLACES, OLD_STATE, Layout, move_old_data, old_data

LESSON = "03-parallel-heads"


def written_paths(layout: Layout, db_url: str) -> list[Path]:
    return [layout.submitted, layout.autograded, layout.feedback, layout.grades_csv("x"), layout.grades_plot("x"),
            layout.grades_snapshot("x"), layout.feedback_bundle("x"), layout.log("x"), layout.attempts,
            layout.people, layout.overrides, layout.releases, layout.hub_staging,
            Path(db_url.removeprefix("sqlite:///").split("?")[0]).resolve()]


def test_everything_grading_writes_is_at_the_course_root_in_a_folder_named_for_it_not_in_the_package():
    config = nbgrader_config()
    layout = Layout.of(config)
    written = written_paths(layout, CourseDirectory(config=config).db_url)
    assert layout.root == ROOT
    assert all(path.relative_to(ROOT).parts[0] in GRADING_DATA for path in written), written
    assert not any(path.is_relative_to(ROOT / "grader") or path.is_relative_to(LESSONS) for path in written), written
    # nbgrader's own four where nbgrader keeps them by default
    assert [p.relative_to(ROOT).as_posix() for p in (layout.submitted, layout.autograded, layout.feedback)] == \
        [CourseDirectory().submitted_directory, CourseDirectory().autograded_directory,
         CourseDirectory().feedback_directory]
    assert written[-1] == ROOT / "gradebook.db"


def test_git_ignores_all_grading_data_and_make_clean_removes_it():
    names = [f"{name}/x" if "." not in name else name for name in GRADING_DATA] + ["gradebook.db-journal"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    assert ignored == names
    clean = next(line for line in (ROOT / "Makefile").read_text().splitlines() if "rm -rf gradebook.db" in line)
    assert set(GRADING_DATA) <= set(clean.split()), clean


def test_the_distribution_copies_no_grading_data():
    assert not [path for path in dist.verbatim_files() if Path(path).parts[0] in GRADING_DATA]


# ---------------------------------------------------------------- data left in grader/state/

def old_course(root: Path, entries: dict[str, str]) -> Path:
    """A course in `root` whose grader/state/ holds `entries` (relative path -> text)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = {f'sqlite:///{root}/gradebook.db'!r}\n")
    for name, text in entries.items():
        path = root / OLD_STATE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


MID_TERM = {"README.md": "the old README", "gradebook.db": "grades", "submitted/ada/x/x.ipynb": "{}",
            "autograded/ada/x/x.ipynb": "{}", "feedback/ada/x/x.html": "<p>", "grades/x.csv": "student",
            "logs/x.log": "line", "attempts/x/ada/1.ipynb": "{}", "people.json": "{}", "overrides.json": "{}",
            "releases.json": "{}"}


@pytest.mark.parametrize("argv", [["autograde", LESSON], ["override", LESSON], ["release", LESSON],
                                  ["hub-release", LESSON], ["hub-collect", LESSON]])
def test_every_grading_command_stops_on_data_in_the_old_place_naming_it_and_the_command_that_moves_it(
        tmp_path, argv, capsys):
    root = old_course(tmp_path / "my course é", {"gradebook.db": "grades", "submitted/ada/x/x.ipynb": "{}",
                                                 "README.md": "the old README"})
    with pytest.raises(SystemExit) as stopped:
        cli.main([*argv, "--course", str(root)])
    text = str(stopped.value.code)
    assert f"grading data found in {root / OLD_STATE}" in text and "gradebook.db, submitted/." in text, text
    assert "make move-grading-data" in text, text
    command = re.search(r"\((python -m grader move-grading-data .*)\), then", text).group(1)
    assert shlex.split(command)[-2:] == ["--course", str(root)], command  # pasted into a shell, the path is one word
    assert (root / OLD_STATE / "gradebook.db").read_text() == "grades"  # nothing moved by the refusal
    assert not (root / "gradebook.db").exists() and not (root / "submitted").exists()


def test_a_plain_nbgrader_command_in_the_course_stops_on_old_data_too_before_it_starts_a_gradebook(tmp_path):
    """traitlets only logs a config file that raises: the course's configuration exits instead."""
    def plain(root: Path, *argv: str) -> subprocess.CompletedProcess:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs alembic
        return subprocess.run([sys.executable, "-m", "nbgrader", *argv], cwd=root, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PATH": path})

    root = old_course(tmp_path / "course", {"gradebook.db": "grades", "submitted/ada/x/x.ipynb": "{}"})
    done = plain(root, "autograde", LESSON)
    assert done.returncode != 0, done
    assert f"nbgrader stopped: grading data found in {root / OLD_STATE}" in done.stderr, done.stderr
    assert "make move-grading-data" in done.stderr, done.stderr
    assert not (root / "gradebook.db").exists() and not (root / "submitted").exists()
    (root / OLD_STATE / "gradebook.db").unlink()
    shutil.rmtree(root / OLD_STATE / "submitted")
    done = plain(root, "db", "student", "list")  # the control: nothing left in the old place, the command runs
    assert done.returncode == 0 and "nbgrader stopped" not in done.stderr, done
    assert (root / "gradebook.db").exists()


def test_the_refusal_needs_data_a_course_with_only_the_old_readme_or_no_old_folder_is_not_refused(tmp_path):
    for index, entries in enumerate(({}, {"README.md": "the old README"})):
        root = old_course(tmp_path / str(index), entries)
        assert old_data(root) == [] and Layout.of(nbgrader_config(root)).root == root
    root = old_course(tmp_path / "data", {"overrides.json": "{}"})
    with pytest.raises(OldGradingData, match=r"overrides\.json\."):
        Layout.of(nbgrader_config(root))


def test_move_grading_data_puts_each_entry_in_its_new_place_and_removes_the_old_folder(tmp_path, capsys):
    root = old_course(tmp_path / "course", MID_TERM)
    cli.main(["move-grading-data", "--course", str(root)])
    assert not (root / OLD_STATE).exists()
    layout = Layout.of(nbgrader_config(root))  # no longer refused
    assert (root / "gradebook.db").read_text() == "grades"
    assert layout.submitted_notebook("ada", "x").read_text() == "{}"
    assert layout.autograded_notebook("ada", "x").is_file() and layout.feedback_page("ada", "x").is_file()
    assert layout.grades_csv("x").read_text() == "student" and layout.log("x").read_text() == "line"
    assert (layout.attempts / "x" / "ada" / "1.ipynb").is_file()
    assert all(path.read_text() == "{}" for path in (layout.people, layout.overrides, layout.releases))
    printed = capsys.readouterr().out
    assert printed.count("moved ") == len(OLD_PLACES) and f"{len(OLD_PLACES)} moved" in printed, printed


def test_moving_refuses_before_moving_anything_when_a_new_place_is_taken_or_an_entry_is_unknown(tmp_path):
    root = old_course(tmp_path / "taken", {"gradebook.db": "old", "people.json": "{}"})
    (root / "gradebook.db").write_text("new")
    with pytest.raises(OldGradingData, match=re.escape(str(root / "gradebook.db"))):
        move_old_data(root)
    assert (root / OLD_STATE / "people.json").is_file() and (root / "gradebook.db").read_text() == "new"
    root = old_course(tmp_path / "unknown", {"gradebook.db": "old", "notes.txt": "mine"})
    with pytest.raises(OldGradingData, match="notes.txt"):
        move_old_data(root)
    assert (root / OLD_STATE / "gradebook.db").is_file()
