"""Did the student run cells after last saving? A hint for `make check`, from IPython's own history.

A JupyterLab kernel records every cell it runs in IPython's history database
(`$IPYTHONDIR/profile_default/history.sqlite`, by default `~/.ipython/...`): one session per kernel,
each cell with its execution count, and the time the session started. The kernel session of a
notebook is the most recent one in which most cells the kernel ran are cells of that notebook as
saved (an edited cell was run in its new form, so not every one matches). The notebook on disk is
older than the student's last run when that session started after the file was last written and
ran cells, or when the file holds outputs of that session (execution counts) and the session ran
a cell with a higher count than any saved. Nothing else can be known from outside the browser;
without a history database there is no hint.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from pathlib import Path

from nbformat import NotebookNode

SESSIONS = 20  # most recent kernel sessions looked at


def history_file() -> Path:
    return Path(os.environ.get("IPYTHONDIR") or Path.home() / ".ipython") / "profile_default" / "history.sqlite"


def last_unsaved_run(nb: NotebookNode, history: Path | None = None, *,
                     saved_at: float | None = None) -> tuple[int, int] | None:
    """(execution count of the kernel's last run, highest count saved in `nb`) when the notebook's
    most recent kernel session ran cells after `nb` was saved (`saved_at`: the file's modification
    time, as time.time() gives it); None when nothing says the file is older."""
    history = history or history_file()
    if not history.is_file():
        return None
    sources = {str(c.source).strip() for c in nb.cells if c.cell_type == "code" and str(c.source).strip()}
    saved = max((c.get("execution_count") or 0 for c in nb.cells if c.cell_type == "code"), default=0)
    try:
        with sqlite3.connect(f"file:{history}?mode=ro", uri=True, timeout=1) as db:
            sessions = db.execute("SELECT session, start FROM sessions ORDER BY session DESC LIMIT ?",
                                  (SESSIONS,)).fetchall()
            for session, start in sessions:
                rows = db.execute("SELECT line, source FROM history WHERE session = ? ORDER BY line",
                                  (session,)).fetchall()
                if not rows:
                    continue
                if 2 * sum(str(source).strip() in sources for _, source in rows) <= len(rows):
                    continue  # another notebook's kernel, or a console
                last = max(int(line) for line, _ in rows)
                if _started_after(start, saved_at):
                    return last, saved  # a kernel started after the save ran cells
                return (last, saved) if saved and last > saved else None
    except sqlite3.Error:  # locked, damaged or of another schema: no hint rather than a failure
        return None
    return None


def _started_after(start: object, saved_at: float | None) -> bool:
    """Whether a session's start (IPython stores local time as text) is after the file was saved."""
    if saved_at is None:
        return False
    try:
        return datetime.fromisoformat(str(start)) > datetime.fromtimestamp(saved_at)
    except ValueError:
        return False
