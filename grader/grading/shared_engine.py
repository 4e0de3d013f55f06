"""One SQLAlchemy engine per gradebook URL and process, for every nbgrader `Gradebook` made in it.

nbgrader opens a new `Gradebook` about eleven times per autograded submission (each converter and
preprocessor its own), and each one calls `create_engine`: a new engine, so a new compiled-statement
cache, and every query compiled again. `share_engines()` makes `nbgrader.api.create_engine` hand
back the same engine for the same URL; `Gradebook.close()` still disposes of its connections, and a
forked process starts with fresh ones (SQLAlchemy's `dispose(close=False)`), keeping the compiled
statements it inherited. The gradebook's rows are the same either way.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import nbgrader.api
import sqlalchemy

_engines: dict[tuple[str, tuple[tuple[str, Any], ...]], sqlalchemy.Engine] = {}
_lock = threading.Lock()


def _create_engine(url, **kwargs) -> sqlalchemy.Engine:
    key = (str(url), tuple(sorted(kwargs.items())))
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = sqlalchemy.create_engine(url, **kwargs)
        return engine


def _after_fork() -> None:
    for engine in _engines.values():
        engine.dispose(close=False)  # the parent's connections stay the parent's


def share_engines() -> None:
    """From now on, every nbgrader Gradebook of this process with the same URL shares one engine."""
    if nbgrader.api.create_engine is not _create_engine:
        nbgrader.api.create_engine = _create_engine
        os.register_at_fork(after_in_child=_after_fork)


def shared() -> int:
    """How many engines this process holds (tests)."""
    return len(_engines)
