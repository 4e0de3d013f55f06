"""nbgrader's API over a course's gradebook, refusing a configuration it would fail on deep inside nbgrader."""

from __future__ import annotations

import os
import sys
import weakref
from pathlib import Path

from traitlets.config import Config

from grader.errors import GradebookRefused


def nbgrader_api(config: Config):
    """An `NbGraderAPI` for `config` (the API does not read nbgrader_config.py by itself).

    Creates the gradebook's folder, which SQLite cannot create itself.
    """
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    scripts_first_on_path()
    coursedir = CourseDirectory(config=config)
    require_course_id(coursedir)
    if coursedir.db_url.startswith("sqlite:///"):
        Path(coursedir.db_url.removeprefix("sqlite:///").split("?")[0]).parent.mkdir(parents=True, exist_ok=True)
    return NbGraderAPI(coursedir=coursedir, config=config)


def require_course_id(coursedir) -> None:
    """Refuse a gradebook other than SQLite's when the course has no `CourseDirectory.course_id`.

    nbgrader's default course id is empty, and it then records assignments under a course that is
    not in the gradebook: SQLite lets that through, but PostgreSQL enforces the foreign key and
    releasing fails deep inside nbgrader.
    """
    if not coursedir.db_url.startswith("sqlite") and not coursedir.course_id:
        dialect = coursedir.db_url.split(":")[0]
        raise GradebookRefused(f"a {dialect} gradebook needs a course id: set "
                               "c.CourseDirectory.course_id = '<course>' in nbgrader_config.py "
                               "(nbgrader's empty default only works with SQLite)")


def open_gradebook(db_url: str, course_id: str):
    """nbgrader's `Gradebook` at `db_url`, to use as a context manager; created (by nbgrader) if missing.

    A batch holds it open while its grading processes are forked (grader.grading.running.supervisor): a
    forked process leaves the connections it inherits to this one (SQLAlchemy's `dispose(close=False)`),
    so that none of them, a PostgreSQL connection above all, is closed or used from two processes.
    """
    from nbgrader.api import Gradebook

    scripts_first_on_path()
    gradebook = Gradebook(db_url, course_id)
    _OPEN_ENGINES.add(gradebook.engine)
    return gradebook


_OPEN_ENGINES: weakref.WeakSet = weakref.WeakSet()


def _leave_inherited_connections() -> None:
    for engine in list(_OPEN_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_leave_inherited_connections)


def scripts_first_on_path() -> None:
    """Put this environment's scripts folder first on PATH (in os.environ), even when it was not activated.

    nbgrader runs the `alembic` command by name when it creates a gradebook.
    """
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
