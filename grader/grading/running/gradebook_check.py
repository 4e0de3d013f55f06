"""Refuse a gradebook that holds anything the course did not put there.

A trigger or a view can change grades as nbgrader writes them; an unknown table or a student
whose id no file name could produce is a sign that something other than grading wrote to it.
Grading refuses such a gradebook, naming what it found, before anything else reads or writes it: the
batch checks the gradebook it has just opened (through the engine of nbgrader's `Gradebook`, its one
connection to it).
"""

from __future__ import annotations

import sqlalchemy
from nbgrader.api import Base, Gradebook

from grader.errors import GradebookRefused
from grader.grading.intake.ids import normalised_id

NBGRADER_TABLES = set(Base.metadata.tables) | {"alembic_version"}


def check_gradebook(gradebook: Gradebook) -> None:
    """Raise GradebookRefused when the open `gradebook` holds triggers, views, unknown tables or students."""
    engine = gradebook.engine
    inspector = sqlalchemy.inspect(engine)
    tables = set(inspector.get_table_names())
    problems = [f"a table nbgrader does not make: {name}" for name in sorted(tables - NBGRADER_TABLES)]
    problems += [f"a view: {name}" for name in sorted(inspector.get_view_names())]
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            triggers = connection.execute(sqlalchemy.text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
        else:
            triggers = connection.execute(sqlalchemy.text(
                "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = current_schema()"))
        problems += [f"a trigger: {name}" for (name,) in triggers]
        if "student" in tables:
            students = connection.execute(sqlalchemy.text("SELECT id FROM student"))
            problems += [f"a student id no submission could carry: {ident!r}" for (ident,) in students
                         if normalised_id(str(ident)) != ident]
    if problems:
        where = engine.url.render_as_string(hide_password=True).split("?")[0]
        raise GradebookRefused(f"the gradebook {where} holds what the course did not put there; "
                               "grading refused:\n  " + "\n  ".join(problems[:20]))
