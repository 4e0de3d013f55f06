"""Check your lesson notebook before you hand it in: which exercises pass their visible tests.

`make check LESSON=<id>` (or `python -m grader check <id>`; no id checks every lesson) runs the
notebook the way nbgrader's JupyterLab "Validate" button does, with nbgrader's own machinery (the
`Validator`'s preprocessors and environment, and the course's nbgrader configuration, so the same
per-cell time limit as grading, and grading's `IgnorePattern` for harmless stderr), and prints
one line per exercise:

- **passed**: the exercise's visible test cell ran without an error;
- **failed**, with the visible test's message (it names the likely mistake);
- **not attempted**: the answer cell is still the release's `raise NotImplementedError()` stub.

Exit status, for scripts: 0 when every notebook was checked, whatever the exercises' results
(failed exercises are a normal result of a check, not an error); 1 with `--strict` when some
exercise did not pass or a locked cell was changed; 2 when a notebook could not be checked at all
(missing, unreadable, or its kernel died). When IPython's history shows the kernel ran cells after
the notebook was last saved, the report says so first (grader/student/unsaved.py). Each report
ends with the lesson's deadline and whether a submission made now would be late
(grader/student/deadline.py). Passing is
reported as "visible checks passed; hidden tests run at grading": hidden tests call your code on
fresh inputs when your notebook is graded, and this check cannot see them.

Locked test cells. nbgrader's `validate` says "Success!" for a notebook whose test cells were
deleted, and grades an edited test cell as edited. Grading does neither: it puts the original
test cells back (grader.pipeline.repair_cells). So does this check, with the same rule for where a
deleted cell goes back (`grader.cell_roles.restore_locked_cells`): it compares every locked cell of
your notebook with the lesson's original, reports each one that was deleted or edited, and runs
the original tests in their place, so the visible tests give the results grading will see.

Where the originals come from: grader/student/originals.py. In the course repository, they are
built in memory from the reference notebooks by nbgrader's own release pipeline, which yields
exactly the released notebook, checksums included; in a student distribution, they are the
pristine copies it ships. If you update the course (`git pull`) after a test cell changed, your
older copy is reported as edited, and rightly: grading runs the current test. The distribution's
copy of this module is this file, unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
from nbconvert.filters import strip_ansi
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute, IgnorePattern
from nbgrader.validator import Validator
from traitlets.config import Config

from grader import cell_roles as nbmeta
from grader.errors import UsageError
from grader.student import deadline
from grader.student.layout import LESSONS, ROOT, nbgrader_config, select_lessons, student_notebook, with_lesson_helpers
from grader.student.originals import original_notebook
from grader.student.points import number
from grader.student.unsaved import last_unsaved_run

PASSED = "passed"
FAILED = "failed"
NOT_ATTEMPTED = "not attempted"
HONEST_PASS = "visible checks passed; hidden tests run at grading"


@dataclass(frozen=True)
class Exercise:
    """One autograded test cell of a lesson and what happened when it ran."""

    test_id: str  # grade_id of the locked test cell
    points: float
    answers: tuple[str, ...]  # grade_ids of the solution cells this test grades
    status: str  # PASSED, FAILED or NOT_ATTEMPTED
    message: str = ""  # why it failed: the visible test's own message

    @property
    def name(self) -> str:
        return ", ".join(self.answers) or self.test_id


@dataclass(frozen=True)
class LessonCheck:
    """The self-check of one lesson notebook."""

    lesson: str
    notebook: Path
    exercises: tuple[Exercise, ...] = ()
    deleted: tuple[str, ...] = ()  # grade_ids of locked cells missing from the notebook
    edited: tuple[str, ...] = ()  # grade_ids of locked cells that differ from the lesson's
    problem: str = ""  # set when the notebook could not be checked at all
    unsaved: tuple[int, int] | None = None  # (kernel's last execution count, highest saved), when newer

    @property
    def ok(self) -> bool:
        return (not self.problem and not self.deleted and not self.edited and bool(self.exercises)
                and all(e.status == PASSED for e in self.exercises))


def _fingerprint(cell: NotebookNode) -> tuple:
    """What nbgrader's checksum of a locked cell covers: type, source, role and points."""
    return (cell.cell_type, cell.source, nbmeta.kind(cell), nbmeta.is_locked(cell), nbmeta.meta(cell).get("points"))


def restore_locked_cells(nb: NotebookNode, released: NotebookNode) -> tuple[NotebookNode, list[str], list[str]]:
    """A copy of `nb` with the lesson's locked cells as released, exactly as grading restores them.

    Returns the copy, the grade_ids of locked cells that were deleted (put back), and those that
    were edited or duplicated (replaced by the original).
    """
    cells, deleted, edited = nbmeta.restore_locked_cells(
        nb, released, same=lambda cell, original: _fingerprint(cell) == _fingerprint(original))
    restored = copy.deepcopy(nb)
    restored.cells = cells
    return restored, deleted, edited


class _NotebookRunner(Validator):
    """nbgrader's Validator, asked only to run a notebook: its preprocessors, its environment."""

    def run(self, nb: NotebookNode, directory: Path) -> NotebookNode:
        """Run `nb` through each of the Validator's preprocessors in turn, as `nbgrader validate` does."""
        resources: dict = {}
        with (utils.chdir(str(directory)), _kernel_pythonpath(),
              utils.setenv(NBGRADER_VALIDATING="1", NBGRADER_EXECUTION="validate")):
            for preprocessor in self.preprocessors:
                nb, resources = preprocessor(parent=self).preprocess(nb, resources)
        return self.as_graded(nb)

    def as_graded(self, nb: NotebookNode) -> NotebookNode:
        """Drop the stderr output that grading ignores before scoring (the course's `IgnorePattern`)."""
        ignore = IgnorePattern(parent=self)
        return ignore.preprocess(nb, {})[0] if ignore.enabled else nb


@contextlib.contextmanager
def _kernel_pythonpath():
    """While it lasts, kernels started by this process can `import lesson_helpers` (PYTHONPATH)."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = with_lesson_helpers(dict(os.environ))["PYTHONPATH"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def _error_text(cell: NotebookNode, timeout: int | None = None) -> str:
    """The first error a cell produced, as the student should read it, or ''."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            if output.ename in ("CellTimeoutError", "KeyboardInterrupt"):  # how a timed-out cell ends
                limit = f"within {timeout} s " if timeout else ""
                return f"did not finish {limit}and was stopped (an infinite loop?)"
            evalue = strip_ansi(output.evalue).strip()
            return f"{output.ename}: {evalue}" if evalue else output.ename
        if output.output_type == "stream" and output.name == "stderr":
            first = strip_ansi(output.text).strip().splitlines()[:1]
            return "wrote to stderr, which grading scores as a failure: " + (first[0] if first else "")
    return ""


def _exercises(executed: NotebookNode, released: NotebookNode, log, timeout: int | None) -> tuple[Exercise, ...]:
    """One Exercise per autograded test cell, in lesson order, from the executed notebook."""
    stubs = {nbmeta.grade_id(c): c.source for c in released.cells if nbmeta.kind(c) == "solution"}
    by_id = nbmeta.cells_by_id(executed)
    exercises, answers = [], []
    for original in released.cells:
        if nbmeta.kind(original) == "solution" and not nbmeta.is_graded(original):
            answers.append(nbmeta.grade_id(original))
        if not nbmeta.is_test(original):
            continue
        test_id = nbmeta.grade_id(original)
        test = by_id[test_id]
        score, points = utils.determine_grade(test, log)
        mine = [by_id[a] for a in answers if a in by_id]
        if score == points:
            exercises.append(Exercise(test_id, points, tuple(answers), PASSED))
        else:
            message = _error_text(test, timeout) or f"scored {score} of {points} points"
            unchanged = any(cell.source == stubs[nbmeta.grade_id(cell)] for cell in mine)
            if unchanged or message.startswith("NotImplementedError"):
                exercises.append(Exercise(test_id, points, tuple(answers), NOT_ATTEMPTED,
                                          "still raises NotImplementedError"))
            else:
                causes = [(nbmeta.grade_id(cell), _error_text(cell, timeout)) for cell in mine]
                causes = [f"your cell {name}: {error}" for name, error in causes if error]
                exercises.append(Exercise(test_id, points, tuple(answers), FAILED,
                                          "; then its test: ".join([*causes, message])))
        answers = []
    return tuple(exercises)


def check_notebook(lesson: str, notebook: Path, *, config: Config | None = None) -> LessonCheck:
    """Self-check `notebook` as the student's work on `lesson`; nothing is written to disk."""
    config = config if config is not None else nbgrader_config()
    notebook = Path(notebook)
    if not notebook.is_file():
        return LessonCheck(lesson, notebook, problem=f"no notebook at {notebook}")
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception as error:  # any unreadable file is reported, not raised
        return LessonCheck(lesson, notebook, problem=f"cannot read {notebook}: {error}")
    unsaved = last_unsaved_run(nb, saved_at=notebook.stat().st_mtime)
    released = original_notebook(lesson, config)
    restored, deleted, edited = restore_locked_cells(nb, released)
    config = copy.deepcopy(config)
    # The kernel's start-up log ("running over TCP without encryption") is noise for a student. A
    # check shows no output, so, as while grading, no figure is drawn.
    config.Execute.extra_arguments = [*config.Execute.get("extra_arguments", []), "--IPKernelApp.log_level=ERROR",
                                      "--InlineBackend.figure_formats=[]"]
    runner = _NotebookRunner(config=config)
    try:
        executed = runner.run(restored, notebook.resolve().parent)
    except Exception as error:  # e.g. a kernel that died, broken nbgrader metadata
        return LessonCheck(lesson, notebook, deleted=tuple(deleted), edited=tuple(edited),
                           problem=f"the notebook could not be run: {type(error).__name__}: {error}")
    timeout = config.Execute.get("timeout", Execute.timeout.default_value)
    exercises = _exercises(executed, released, runner.log, timeout)
    return LessonCheck(lesson, notebook, exercises, tuple(deleted), tuple(edited), unsaved=unsaved)


def _points(value: float) -> str:
    return f"{number(value)} point{'s' if value != 1 else ''}"


def report(check: LessonCheck, *, root: Path = ROOT) -> str:
    """The self-check of one lesson as text for the student."""
    try:
        where = check.notebook.resolve().relative_to(root)
    except ValueError:
        where = check.notebook
    lines = [f"{check.lesson}  ({where})"]
    if check.unsaved:
        ran, saved = check.unsaved
        lines.append(f"  NOTE: your kernel ran cell [{ran}] but the saved file's last run cell is [{saved}]: the file "
                     "on disk is older than your last run. Save in JupyterLab (File > Save Notebook) and check again.")
    if check.problem:
        lines.append(f"  cannot check: {check.problem}")
    width = max((len(e.name) for e in check.exercises), default=0)
    for e in check.exercises:
        label = {PASSED: "passed", FAILED: "FAILED", NOT_ATTEMPTED: "not attempted"}[e.status]
        line = f"  {label:<15}{e.name:<{width}}  ({_points(e.points)})"
        lines.append(line + (f"  {e.message}" if e.status == NOT_ATTEMPTED else ""))
        if e.status == FAILED:
            lines.append(f"  {'':<15}{e.message}")
    for grade_id in check.deleted:
        lines.append(f"  locked cell {grade_id} was deleted: grading puts it back and runs it, and so did this check")
    for grade_id in check.edited:
        lines.append(f"  locked cell {grade_id} was edited: grading runs the lesson's original instead, "
                     "and so did this check (undo your change to see the same result in JupyterLab)")
    if check.ok:
        total = sum(e.points for e in check.exercises)
        lines.append(f"  => {HONEST_PASS} ({len(check.exercises)} exercises, {_points(total)}).")
    elif check.exercises:
        todo = sum(e.status != PASSED for e in check.exercises)
        tampered = len(check.deleted) + len(check.edited)
        parts = [f"{todo} of {len(check.exercises)} exercises to finish"] if todo else []
        parts += [f"{tampered} locked cell{'s' if tampered != 1 else ''} changed"] if tampered else []
        lines.append(f"  => not done yet: {', '.join(parts)}.")
    return "\n".join(lines)


def main(*, lessons: list[str] | None = None, notebook: Path | None = None, lessons_dir: Path = LESSONS,
         timeout: int | None = None, quiet: bool = False, due: bool = True,
         now: datetime | None = None) -> list[LessonCheck]:
    """Self-check each lesson's notebook and print the results; return them.

    With `due`, each report ends with the lesson's deadline and whether a submission made `now`
    (default: the current time) would be late (grader/student/deadline.py).

    `lessons` defaults to every lesson of the course. The notebook checked is
    `<lessons_dir>/<id>/<id>.ipynb`, or `notebook` when exactly one lesson is named. `timeout`
    overrides the per-cell time limit of the course's nbgrader configuration (the one grading uses).
    """
    lessons = select_lessons(lessons)
    if notebook is not None and len(lessons) != 1:
        raise UsageError("--notebook needs exactly one lesson id")
    config = nbgrader_config()
    if timeout is not None:
        config.Execute.timeout = timeout
    results = []
    for lesson in lessons:
        path = Path(notebook) if notebook is not None else student_notebook(lesson, lessons_dir)
        result = check_notebook(lesson, path, config=config)
        if not quiet:
            print(report(result) + (f"\n{deadline.describe(lesson, deadline.due(lesson), now)}" if due else ""),
                  flush=True)
        results.append(result)
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--notebook", type=Path,
                        help="check this notebook instead of lessons/<id>/<id>.ipynb (one lesson only)")
    parser.add_argument("--timeout", type=int, help="seconds allowed per cell (default: the grading limit)")
    parser.add_argument("--strict", action="store_true",
                        help="exit with 1 unless every exercise passed and every locked cell is intact")


def exit_status(results: list[LessonCheck], *, strict: bool = False) -> int:
    """2 if a notebook could not be checked; else 1 with `strict` if not all passed; else 0."""
    if any(r.problem for r in results):
        return 2
    return 1 if strict and not all(r.ok for r in results) else 0


def run(args: argparse.Namespace) -> int:
    """Self-check as `args` say; the exit status (`exit_status`)."""
    results = main(lessons=args.lessons, notebook=args.notebook, timeout=args.timeout)
    return exit_status(results, strict=args.strict)
