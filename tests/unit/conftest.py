"""Fixtures of the unit tier: a fresh gradebook for each test, without nbgrader's slow start."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbgrader.api as nbgrader_api
import pytest


def alembic_head() -> str:
    """What nbgrader's `get_alembic_version` reads from an `alembic heads` command, read in this process."""
    import nbgrader
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()


@pytest.fixture(scope="session")
def made_gradebook(tmp_path_factory) -> Path:
    """An empty gradebook as nbgrader makes it, made once per test process and copied for each test."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with pytest.MonkeyPatch.context() as patch:  # nbgrader's own `alembic heads` command takes a second to start
        patch.setattr(nbgrader_api, "get_alembic_version", alembic_head)
        nbgrader_api.Gradebook(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def gradebook_url(made_gradebook, tmp_path) -> str:
    """The URL of an empty gradebook of this test's own (tmp_path / "gradebook.db")."""
    copy = tmp_path / "gradebook.db"
    shutil.copyfile(made_gradebook, copy)
    return f"sqlite:///{copy}"
