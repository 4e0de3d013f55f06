"""Each lesson's hidden tests cost a small fraction of a cell's time limit (which counts CPU time).

For every lesson, the reference answers are autograded as a student's submission, with
`GuardedExecute.cell_cpu_log` on: each graded cell's CPU time, read from its kernel's cgroup while
grading ran it (hidden tests and trusted checks included). The test prints each lesson's most costly
test cell and the largest ratio of cost to limit over all lessons.
"""

from __future__ import annotations

import json
import os

import pytest

from grader.course import lesson_ids
from grader.grading.autograde import main as autograde
from tests.integration.guarded_run import needs_cgroup
from tests.support import build_notebook, make_course

pytestmark = pytest.mark.more_cases  # every lesson's worst hidden test, each graded again

BUDGET = 0.5  # the most a test cell of an honest answer may cost, as a fraction of its cell's limit
LIMIT = 30  # seconds per cell, the course's Execute.timeout


@needs_cgroup
def test_every_lessons_worst_hidden_test_costs_a_small_fraction_of_its_cell_limit(tmp_path, capsys):
    course = make_course(tmp_path / "course", cell_timeout=LIMIT)
    log = tmp_path / "cell-cpu.jsonl"
    with (course.root / "nbgrader_config.py").open("a") as config:
        config.write(f"c.GuardedExecute.cell_cpu_log = {str(log)!r}\n")
    worst: dict[str, tuple[str, float]] = {}
    for lesson in lesson_ids():
        course.submit(lesson, {"reference": build_notebook(lesson, course.release(lesson), {})})
        with open(os.devnull, "w") as quiet:
            batch = autograde(lesson=lesson, course=course.root, workers=1, force=True, progress=quiet, out=quiet)
        [result] = batch.results
        assert result.status == "graded" and result.total == sum(result.scores.values()), result
        [line] = log.read_text().splitlines()
        log.unlink()
        costs = json.loads(line)["cells"]
        assert set(costs) == set(result.scores), f"{lesson}: CPU time not counted for every test cell"
        worst[lesson] = max(costs.items(), key=lambda item: item[1])
    largest = max(seconds for _, seconds in worst.values()) / LIMIT
    with capsys.disabled():
        print(f"\nworst hidden test per lesson, honest answer (CPU s of the kernel's cgroup, against {LIMIT} s):")
        for lesson, (cell, seconds) in worst.items():
            print(f"  {lesson:<22} {cell:<36} {seconds:6.2f} s  ratio {seconds / LIMIT:.3f}")
        print(f"largest ratio: {largest:.3f}")
    assert largest <= BUDGET, worst
