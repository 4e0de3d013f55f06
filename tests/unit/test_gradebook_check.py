"""A gradebook with triggers, views, unknown tables or impossible students is refused before grading."""

from __future__ import annotations

import sqlite3

import pytest
from nbgrader.api import Gradebook

from grader.errors import GradebookRefused
from grader.grading.running.gradebook_check import check_gradebook


@pytest.fixture
def gradebook(gradebook_url) -> str:
    """A gradebook as nbgrader makes it, with one student."""
    with Gradebook(gradebook_url) as book:
        book.add_student("ada")
    return gradebook_url


def test_a_gradebook_as_nbgrader_made_it_is_accepted(gradebook):
    with Gradebook(gradebook + "?timeout=60") as book:
        check_gradebook(book)


@pytest.mark.parametrize(("statement", "found"), [
    ("CREATE TRIGGER bump AFTER INSERT ON grade BEGIN UPDATE grade SET auto_score = 100; END", "a trigger: bump"),
    ("CREATE VIEW everything AS SELECT * FROM grade", "a view: everything"),
    ("CREATE TABLE loot (x TEXT)", "a table nbgrader does not make: loot"),
    ("INSERT INTO student (id) VALUES ('Ada Lovelace')", "a student id no submission could carry"),
])
def test_anything_else_is_refused_naming_it(gradebook, statement, found):
    db = sqlite3.connect(gradebook.removeprefix("sqlite:///"))
    db.execute(statement)
    db.commit()
    db.close()
    with Gradebook(gradebook) as book, pytest.raises(GradebookRefused, match=found):
        check_gradebook(book)


def test_a_gradebook_other_than_sqlite_without_a_course_id_is_refused_before_it_is_opened(tmp_path):
    """nbgrader's empty default course id breaks PostgreSQL's foreign keys deep inside a release:
    releasing and grading refuse it first, saying what to set. Nothing is connected to."""
    from grader.course import ROOT, nbgrader_config
    from grader.gradebook import nbgrader_api
    from grader.grading.autograde import main as autograde

    nowhere = f"postgresql+psycopg://nobody@/gradebook?host={tmp_path / 'no-server'}"
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.db_url = {nowhere!r}\n")
    with pytest.raises(GradebookRefused,
                       match=r"a postgresql\+psycopg gradebook needs a course id: set c.CourseDirectory"):
        nbgrader_api(nbgrader_config(tmp_path))
    with pytest.raises(GradebookRefused, match="needs a course id"):
        autograde(lesson="03-parallel-heads", course=tmp_path, unsafe_no_sandbox=True)
    assert nbgrader_api(nbgrader_config(tmp_path, course_id="attention")).coursedir.course_id == "attention"
    assert nbgrader_api(nbgrader_config(tmp_path, db_url=f"sqlite:///{tmp_path / 'gradebook.db'}"))
