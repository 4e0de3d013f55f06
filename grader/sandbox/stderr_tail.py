"""What a kernel's sandbox wrote to its stderr (bwrap's, setpriv's and the interpreter's messages), kept bounded.

The kernel's stdout and stderr are the write end of a pipe (never the grader's own descriptors: a
kernel could reopen those through /proc/self/fd). A thread of the grading process reads the pipe to
its end, keeps the first `head` and the last `tail` bytes and drops what lies between, so a kernel
that floods its stderr costs the grader nothing. `text()` is the kept text as one inert line
(grader.safe_text.for_terminal), ready for the log and a failure message.
"""

from __future__ import annotations

import os
import threading

from grader.safe_text import for_terminal

HEAD = 1024  # bytes kept from the start: bwrap's and setpriv's own messages come first
TAIL = 3072  # bytes kept from the end: the interpreter's last traceback


class StderrTail:
    """Reads the pipe `fd` (which it then owns and closes) to its end in a thread of its own."""

    def __init__(self, fd: int, *, head: int = HEAD, tail: int = TAIL):
        self._fd, self._head_size, self._tail_size = fd, head, tail
        self._head, self._tail, self._dropped = b"", b"", 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="kernel-stderr", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, 65536):
                with self._lock:
                    room = self._head_size - len(self._head)
                    self._head += chunk[:room]
                    self._tail += chunk[room:] if room > 0 else chunk
                    if len(self._tail) > self._tail_size:
                        self._dropped += len(self._tail) - self._tail_size
                        self._tail = self._tail[-self._tail_size:]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the writers to be gone (everything they wrote is then in)."""
        self._thread.join(timeout)

    def text(self) -> str:
        """What was kept, stripped and made inert; "" when nothing was written."""
        with self._lock:
            head, tail, dropped = self._head, self._tail, self._dropped
        middle = f" [... {dropped} bytes left out ...] " if dropped else ""
        kept = head.decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")
        return for_terminal(kept.strip())
