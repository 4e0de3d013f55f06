"""Which kernel commands the warm template can stand in for, and the benchmark's phase records."""

from __future__ import annotations

import json
import sys

from grader.grading import phases
from grader.sandbox.template import kernel_args


def test_only_this_environments_ipykernel_is_forked_from_the_template():
    args = ["-f", "/run/k/connection.json", "--InteractiveShell.xmode=Minimal"]
    assert kernel_args(["python", "-m", "ipykernel_launcher", *args]) == args  # a kernelspec's bare python
    assert kernel_args([sys.executable, "-m", "ipykernel_launcher", *args]) == args
    assert kernel_args(["/usr/bin/python2", "-m", "ipykernel_launcher", *args]) is None  # another interpreter
    assert kernel_args(["python", "-m", "other_kernel", *args]) is None
    assert kernel_args(["python"]) is None


def test_phases_are_recorded_only_where_the_benchmark_asks(tmp_path, monkeypatch):
    monkeypatch.delenv(phases.PHASES, raising=False)
    phases.record(cells=1.0)
    assert not phases.enabled()
    target = tmp_path / "phases.jsonl"
    monkeypatch.setenv(phases.PHASES, str(target))
    phases.record(kernel_start=0.5, cells=1.5)
    phases.record(feedback=0.25)
    assert [json.loads(line) for line in target.read_text().splitlines()] == [
        {"kernel_start": 0.5, "cells": 1.5}, {"feedback": 0.25}]
    assert phases.tree_cpu(None) == 0.0 and phases.tree_cpu(2**22 + 1) == 0.0  # no such process
