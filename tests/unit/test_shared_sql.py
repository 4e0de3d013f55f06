"""grader.grading.shared_sql: nbgrader's engines for one gradebook share compiled SQL, and only that."""

from __future__ import annotations

from nbgrader.api import Gradebook
from sqlalchemy import create_engine, text

from grader.grading import shared_sql

QUERY = text("SELECT 1")


def _cache_hit(url: str) -> bool:
    """Whether a fresh engine for `url` found the statement already compiled."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            result = connection.execute(QUERY.columns())
            return result.context.cache_hit == engine.dialect.CACHE_HIT
    finally:
        engine.dispose()


def test_a_new_engine_for_a_seen_url_finds_its_statements_compiled(tmp_path):
    shared_sql.register()
    url = f"sqlite:///{tmp_path / 'a.db'}?plugin={shared_sql.NAME}"
    assert not _cache_hit(url)  # the first engine compiles it
    assert _cache_hit(url)  # the next one, a new engine, does not
    assert not _cache_hit(f"sqlite:///{tmp_path / 'b.db'}?plugin={shared_sql.NAME}")  # another gradebook: its own
    plain = f"sqlite:///{tmp_path / 'a.db'}"
    assert not _cache_hit(plain) and not _cache_hit(plain)  # without the plugin, each engine compiles anew


def test_a_gradebook_behind_the_plugin_keeps_its_own_connections_and_data(tmp_path):
    shared_sql.register()
    first, second = (f"sqlite:///{tmp_path / name}?plugin={shared_sql.NAME}" for name in ("one.db", "two.db"))
    with Gradebook(first) as gradebook:
        gradebook.add_student("ada")
    with Gradebook(second) as gradebook:
        gradebook.add_student("grace")
    with Gradebook(first) as one, Gradebook(first) as again, Gradebook(second) as two:
        assert [s.id for s in one.students] == ["ada"] and [s.id for s in two.students] == ["grace"]
        assert one.engine.dialect is again.engine.dialect and one.engine.pool is not again.engine.pool
        assert two.engine.dialect is not one.engine.dialect
