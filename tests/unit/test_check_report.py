"""`make check` reads as a report: its exit status, and the hint that the file is older than the last run."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import nbformat

from grader.student import check, unsaved


def test_failed_exercises_exit_0_unless_strict_and_an_unreadable_notebook_exits_2():
    failed = check.LessonCheck("l", Path("x"), (check.Exercise("t", 1, ("a",), check.FAILED),))
    passed = check.LessonCheck("l", Path("x"), (check.Exercise("t", 1, ("a",), check.PASSED),))
    broken = check.LessonCheck("l", Path("x"), problem="cannot read x")
    assert check.exit_status([failed]) == 0 and check.exit_status([passed]) == 0
    assert check.exit_status([failed], strict=True) == 1 and check.exit_status([passed], strict=True) == 0
    assert check.exit_status([passed, broken]) == 2


def history(path: Path, sessions: dict[int, list[str]], start: str = "2026-12-01 10:00:00.000001") -> Path:
    """An IPython history database with these sessions' inputs (as IPython's own schema has them)."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sessions (session integer primary key autoincrement, start timestamp, "
                   "end timestamp, num_cmds integer, remark text)")
        db.execute("CREATE TABLE history (session integer, line integer, source text, source_raw text, "
                   "PRIMARY KEY (session, line))")
        for session, inputs in sessions.items():
            db.execute("INSERT INTO sessions VALUES (?, ?, NULL, NULL, '')", (session, start))
            db.executemany("INSERT INTO history VALUES (?, ?, ?, ?)",
                           [(session, line, text, text) for line, text in enumerate(inputs, start=1)])
    return path


def saved_notebook(counts: list[int]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}", execution_count=n) for i, n in enumerate(counts)]
    return nb


def test_a_kernel_that_ran_more_cells_than_were_saved_is_reported(tmp_path):
    nb = saved_notebook([1, 2, 3])
    ran_more = history(tmp_path / "h.sqlite", {1: ["print('other notebook')"] * 9,
                                               2: ["x0 = 0", "x1 = 1", "x2 = 2", "x2 = 'edited, not saved'"]})
    assert unsaved.last_unsaved_run(nb, ran_more) == (4, 3)
    report = check.report(check.LessonCheck("l", tmp_path / "l.ipynb", unsaved=(4, 3)), root=tmp_path)
    assert "older than your last run" in report and "Save" in report


def test_a_kernel_started_after_the_save_that_ran_cells_is_reported(tmp_path):
    nb = saved_notebook([None, None, None])  # saved with outputs cleared
    saved_at = datetime(2026, 12, 1, 9, 0).timestamp()
    later = history(tmp_path / "h.sqlite", {1: ["x0 = 0", "x1 = 1"]}, start="2026-12-01 10:00:00")
    assert unsaved.last_unsaved_run(nb, later, saved_at=saved_at) == (2, 0)
    assert unsaved.last_unsaved_run(nb, later, saved_at=datetime(2026, 12, 1, 11, 0).timestamp()) is None


def test_no_hint_when_saved_after_the_last_run_or_when_no_session_is_this_notebooks(tmp_path):
    nb = saved_notebook([1, 2, 3])
    assert unsaved.last_unsaved_run(nb, history(tmp_path / "a.sqlite", {1: ["x0 = 0", "x1 = 1", "x2 = 2"]})) is None
    assert unsaved.last_unsaved_run(nb, history(tmp_path / "b.sqlite", {1: ["print(1)"] * 9})) is None
    assert unsaved.last_unsaved_run(nb, tmp_path / "missing.sqlite") is None
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert unsaved.last_unsaved_run(nb, tmp_path / "junk.sqlite") is None
