"""The detail of a failure for the grading log: a traceback, or what nbgrader or a dead kernel said.

`Result.reason` is one short line for the summary and the CSV; `Result.detail` keeps what someone
debugging the grader needs (the whole traceback, the kernel's last words) for the log alone. Both
hold text a submission may control, so the detail is made one inert line (grader.safe_text) and
bounded: its last DETAIL_CHARS characters, where a traceback's cause is.
"""

from __future__ import annotations

import traceback

from grader.safe_text import for_terminal

DETAIL_CHARS = 4000


def bounded(text: str, limit: int = DETAIL_CHARS) -> str:
    """`text` stripped, its last `limit` characters kept, as one inert line ("" for nothing)."""
    text = str(text).strip()
    if len(text) > limit:
        text = f"[... {len(text) - limit} characters left out ...] " + text[-limit:]
    return for_terminal(text)


def traceback_of(error: BaseException) -> str:
    """`error`'s traceback (a remote one where the executor attached it, as pebble does), bounded and inert."""
    remote = getattr(error, "traceback", None)
    text = remote if isinstance(remote, str) else "".join(traceback.format_exception(error))
    return bounded(text)
