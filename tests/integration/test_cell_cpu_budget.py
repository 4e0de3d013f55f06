"""Each lesson's hidden tests cost a small fraction of a cell's time limit (which counts CPU time).

For every lesson, the reference answers are autograded as a student's submission, then the
autograded notebook (hidden tests and trusted checks included, as they ran) is run once more in a
sandboxed kernel whose cgroup counts each cell's CPU time. The test prints each lesson's most costly
test cell and the largest ratio of cost to limit over all lessons.
"""

from __future__ import annotations

import os
from unittest import mock

import nbformat
import pytest

from grader import notebook
from grader.course import lesson_ids, nbgrader_config
from grader.grading.batch import main as autograde
from grader.pipeline.guarded_execute import GuardedExecute
from tests.integration.test_sandbox_limits import needs_cgroup
from tests.support import build_notebook, make_course

BUDGET = 0.5  # the most a test cell of an honest answer may cost, as a fraction of its cell's limit


@needs_cgroup
@pytest.mark.skipif(bool(os.environ.get("PYTEST_XDIST_WORKER")), reason="a CPU measurement: run it alone")
def test_every_lessons_worst_hidden_test_costs_a_small_fraction_of_its_cell_limit(tmp_path, capsys):
    course = make_course(tmp_path / "course", cell_timeout=30)
    config = nbgrader_config(course.root)
    limit = config.Execute.timeout
    worst: dict[str, tuple[str, float]] = {}
    for lesson in lesson_ids():
        course.submit(lesson, {"reference": build_notebook(lesson, course.release(lesson), {})})
        with open(os.devnull, "w") as quiet:
            autograde(lesson=lesson, course=course.root, workers=1, force=True, progress=quiet, out=quiet)
        graded = nbformat.read(course.layout.autograded_notebook("reference", lesson), as_version=4)
        for cell in graded.cells:
            cell.outputs = [] if cell.cell_type == "code" else cell.get("outputs")
        execute = GuardedExecute(config=config)
        folder = str(course.layout.submitted_notebook("reference", lesson).parent)
        with mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):  # as grading runs it
            execute.preprocess(graded, {"metadata": {"path": folder}})
        costs = {notebook.grade_id(cell): execute.cell_cpu.get(index, 0.0) for index, cell in enumerate(graded.cells)
                 if notebook.meta(cell).get("grade")}
        assert costs and all(index in execute.cell_cpu for index, cell in enumerate(graded.cells)
                             if notebook.meta(cell).get("grade")), f"{lesson}: CPU time not counted"
        worst[lesson] = max(costs.items(), key=lambda item: item[1])
    with capsys.disabled():
        print(f"\nworst hidden test per lesson (CPU s against a {limit} s cell limit):")
        for lesson, (cell, seconds) in worst.items():
            print(f"  {lesson:<32} {cell:<28} {seconds:6.2f} s  {seconds / limit:.3f}")
        largest = max(seconds for _, seconds in worst.values()) / limit
        print(f"largest ratio: {largest:.3f}")
    assert largest <= BUDGET, worst
