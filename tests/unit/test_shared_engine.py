"""grader.grading.shared_engine: nbgrader's Gradebooks share one engine per URL, and its compiled statements."""

from __future__ import annotations

import os

import nbgrader.api
import pytest
from nbgrader.api import Gradebook

from grader.grading import shared_engine
from tests.support import alembic_head


@pytest.fixture(autouse=True)
def in_process_alembic(monkeypatch):
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", alembic_head)  # no `alembic` command needed


def test_gradebooks_of_one_url_share_an_engine_and_compile_a_query_once(tmp_path):
    shared_engine.share_engines()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as first:
        first.add_student("ada")
        engine = first.engine
    with Gradebook(url) as second:
        assert second.engine is engine
        cached = len(engine._compiled_cache)
        assert [s.id for s in second.students] == ["ada"]
    with Gradebook(url) as third:
        assert [s.id for s in third.students] == ["ada"]
        assert len(engine._compiled_cache) == cached + 1  # the students query, compiled by `second` only
    with Gradebook(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.engine is not engine and other.students == []


def test_a_forked_process_opens_connections_of_its_own(tmp_path):
    shared_engine.share_engines()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gradebook:
        gradebook.add_student("ada")
        pool = gradebook.engine.pool
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # in the child: the same engine, a new pool, and the rows readable through it
        try:
            with Gradebook(url) as gradebook:
                ok = gradebook.engine.pool is not pool and [s.id for s in gradebook.students] == ["ada"]
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(child, 0)
    assert answer == b"1"
    assert nbgrader.api.create_engine is shared_engine._create_engine
