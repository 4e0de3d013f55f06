"""A SQLAlchemy plugin: the engines a process makes for one gradebook URL share their compiled SQL.

nbgrader opens the gradebook about eleven times per submission (`Gradebook(db_url)` in each of its
steps), and each `Gradebook` makes an engine of its own. SQLAlchemy caches compiled statements per
engine, keyed by its dialect object, so every engine compiled the same ~90 statements again: a
fifth of a grading process's CPU per submission. With `plugin=grader_shared_sql` in the gradebook's
URL (grader/nbgrader_config.py, which also registers the plugin), each new engine for a URL this
process has seen takes the first engine's dialect and statement cache; its pool and connections
stay its own, so nothing is shared across a fork but compiled statements.
"""

from __future__ import annotations

from sqlalchemy.dialects import plugins
from sqlalchemy.engine import CreateEnginePlugin, Engine
from sqlalchemy.util import LRUCache

NAME = "grader_shared_sql"  # as the gradebook URL names it: `...?plugin=grader_shared_sql`

CACHE_SIZE = 500  # compiled statements kept per URL (SQLAlchemy's own default per engine)

_shared: dict[str, tuple[object, LRUCache]] = {}


class SharedCompiledSQL(CreateEnginePlugin):
    """Give each engine for an already seen URL that URL's first dialect and compiled-statement cache."""

    def update_url(self, url):
        return url  # the plugin takes no arguments of its own from the URL

    def engine_created(self, engine: Engine) -> None:
        key = engine.url.render_as_string(hide_password=False)
        dialect, cache = _shared.setdefault(key, (engine.dialect, LRUCache(CACHE_SIZE)))
        if dialect is not engine.dialect:  # the same class, made from the same URL and arguments
            engine.dialect = dialect
            engine.pool._dialect = dialect
        engine.update_execution_options(compiled_cache=cache)


def register() -> None:
    """Make `plugin=grader_shared_sql` known to SQLAlchemy in this process."""
    plugins.register(NAME, __name__, SharedCompiledSQL.__name__)
