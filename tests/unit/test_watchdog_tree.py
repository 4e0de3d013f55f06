"""The watchdog's view of a kernel's process tree: every descendant, and nothing else."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from grader.sandbox.kernel import _tree

# A child of the main thread, a grandchild, and a child forked from another thread (listed under that
# thread's own /proc task entry, not the main thread's).
TREE = """
import subprocess, threading, time
subprocess.Popen(["sleep", "30"])
subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
threading.Thread(target=lambda: subprocess.Popen(["sleep", "30"]).wait(), daemon=True).start()
time.sleep(30)
"""


def test_the_tree_holds_every_descendant_and_only_those():
    outsider = subprocess.Popen(["sleep", "30"])
    root = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        process = psutil.Process(root.pid)
        deadline = time.monotonic() + 10
        while len(process.children(recursive=True)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        expected = {root.pid, *(child.pid for child in process.children(recursive=True))}
        assert len(expected) == 5
        assert {p.pid for p in _tree(process)} == expected
        assert outsider.pid not in expected
    finally:
        for child in psutil.Process(root.pid).children(recursive=True):
            child.kill()
        root.kill()
        outsider.kill()
        root.wait()
        outsider.wait()
