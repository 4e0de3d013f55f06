"""The benchmark's phase records."""

from __future__ import annotations

import json

from grader.grading import phases


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
