"""The tests' shared helpers: throw-away courses, and fixture submissions built from a release.

A submission is described in `tests/fixtures/<lesson>/submissions.toml` (see the comment at the
top of each file): which answers a student wrote, which locked cells they edited or deleted, and
which test cells should then lose their points. Cheats (`tests/fixtures/cheats/<lesson>.toml`) use
the same format plus `fools`. Building them from the current release, rather than storing
notebooks, keeps the fixtures valid whenever a lesson is edited. Test modules import helpers from
here, never from each other.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell, new_raw_cell

from grader import cell_roles
from grader.course import ROOT, SOLUTIONS, lesson_ids, nbgrader_config, reference_notebook
from grader.gradebook import open_gradebook
from grader.grading.intake.enrolment import enrol
from grader.grading.running.jobs import Job, Result
from grader.grading.running.scores import add_scores
from grader.layout import GRADEBOOK, Layout

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHEATS = FIXTURES / "cheats"


@dataclass(frozen=True)
class Course:
    """A temporary nbgrader course that releases the repository's solutions/.

    Its nbgrader_config.py loads the repository's configuration and only moves the state: the
    release, the gradebook and the submitted/autograded/feedback folders live under `root`.
    """

    root: Path

    @property
    def layout(self) -> Layout:
        return Layout.of(nbgrader_config(self.root))

    @property
    def lessons(self) -> Path:
        return self.root / "lessons"

    @property
    def gradebook(self) -> Path:
        return self.root / GRADEBOOK

    @property
    def released_gradebook(self) -> Path:
        """A copy of the gradebook as the release left it (lessons only, no student), which `make_course`
        takes: a copy for another course starts from it, whatever the shared batch adds meanwhile."""
        return self.root / "gradebook-as-released.db"

    def copy_gradebook(self, target: Path) -> None:
        """Write the gradebook as released to `target` (a consistent copy, through SQLite's backup)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(self.released_gradebook)) as source, \
                contextlib.closing(sqlite3.connect(target)) as written:
            source.backup(written)

    @property
    def db_url(self) -> str:
        """The gradebook's URL as the course's nbgrader config has it (SQLite's without `?timeout`)."""
        from nbgrader.coursedir import CourseDirectory

        url = CourseDirectory(config=nbgrader_config(self.root)).db_url
        return url.split("?")[0] if url.startswith("sqlite") else url

    @property
    def course_id(self) -> str:
        """nbgrader's course id as the course's config has it (empty by default); pass it to `Gradebook`."""
        from nbgrader.coursedir import CourseDirectory

        return CourseDirectory(config=nbgrader_config(self.root)).course_id

    def release(self, lesson: str) -> Path:
        return self.lessons / lesson / f"{lesson}.ipynb"

    def submit(self, lesson: str, submissions: dict[str, nbformat.NotebookNode]) -> None:
        """Put each student's notebook into nbgrader's submitted folder, and the student into the gradebook.

        Grading's own collection adds the students before any job runs (grader.grading.intake.roster); so
        does this, for tests that hand their jobs to the supervisor directly.
        """
        layout = self.layout
        for student, nb in submissions.items():
            path = layout.submitted_notebook(student, lesson)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
        with open_gradebook(self.db_url, self.course_id) as gradebook:
            enrol(gradebook, submissions)

    def add_scores(self, jobs: list[Job], results: list[Result]) -> list[Result]:
        """Each graded result of `jobs` with its points from the gradebook, as a batch reads them (the worker
        returns none): for tests that hand their jobs to the supervisor or the worker directly."""
        cells = {lesson: list(cell_roles.test_points(nbformat.read(self.release(lesson), as_version=4)))
                 for lesson in {job.lesson for job in jobs}}
        with open_gradebook(self.db_url, self.course_id) as gradebook:
            for job, result in zip(jobs, results, strict=True):
                add_scores(gradebook, job.lesson, result, cells[job.lesson])
        return results

    def nbgrader(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run a plain `nbgrader` command in this course, as an instructor would."""
        return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=self.root, text=True,
                              capture_output=True, timeout=timeout)


# In a test run (tests/plugins/kernels.py names a file in GRADED_KERNELS), each sandboxed kernel that
# grading starts writes one line there through nbclient's public `on_notebook_start` hook.
GRADED_KERNELS = "COURSE_TEST_GRADED_KERNELS"
COUNT_SANDBOXED_KERNELS = f"""
import os as _os
if _os.environ.get({GRADED_KERNELS!r}):
    from tests.support import count_sandboxed_kernel as _count
    c.GuardedExecute.on_notebook_start = _count
"""


def count_sandboxed_kernel(notebook, **_) -> None:
    """nbclient's `on_notebook_start` hook: one line in the GRADED_KERNELS file per sandboxed kernel
    (an unconfined one is counted by the IPython startup file of tests/plugins/kernels.py)."""
    if os.environ.get(GRADED_KERNELS) and not notebook.metadata.get("graded_without_sandbox"):  # UNSAFE
        with open(os.environ[GRADED_KERNELS], "a") as log:
            log.write("1\n")


def make_course(root: Path, *, cell_timeout: int = 15, lessons: list[str] | None = None,
                db_url: str | None = None, course_id: str = "") -> Course:
    """A course in `root` whose state is its own, with `lessons` (default: all) released into it.

    The gradebook is SQLite's, in the course's state folder, unless `db_url` names another
    (a PostgreSQL database, say, which needs a `course_id`); releasing creates it there.
    """
    root.mkdir(parents=True, exist_ok=True)
    db_url = db_url or f"sqlite:///{root / GRADEBOOK}?timeout=60"
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}\n"
        f"c.CourseDirectory.db_url = {db_url!r}\n"
        f"c.Execute.timeout = {cell_timeout}\n"
        + (f"c.CourseDirectory.course_id = {course_id!r}\n" if course_id else "")
        + COUNT_SANDBOXED_KERNELS
    )
    subprocess.run([sys.executable, "-m", "grader", "release", *(lessons or []), "--course", str(root)],
                   check=True, capture_output=True, text=True)
    course = Course(root)
    if course.gradebook.exists():  # SQLite's (another database is the test's own to copy)
        with contextlib.closing(sqlite3.connect(course.gradebook)) as source, \
                contextlib.closing(sqlite3.connect(course.released_gradebook)) as written:
            source.backup(written)
    return course


@dataclass(frozen=True)
class Variant:
    name: str
    untouched: bool = False  # hand in the release exactly as it was given out
    answers: dict[str, str] = field(default_factory=dict)  # solution cell grade_id -> code
    replace: dict[str, str] = field(default_factory=dict)  # locked cell grade_id -> edited source
    delete: list[str] = field(default_factory=list)  # grade_ids of cells the student deleted
    lost: list[str] | str = field(default_factory=list)  # test grade_ids scoring 0, or "all"


def variants(lesson: str) -> list[Variant]:
    path = FIXTURES / lesson / "submissions.toml"
    if not path.is_file():
        return []
    spec = tomllib.loads(path.read_text())
    return [Variant(name=name, **fields) for name, fields in spec.items()]


# `make test` grades one lesson's untouched release: a stub scores nothing in every lesson alike (the term,
# batch and hostile tests grade one more each); `make test-all` grades every lesson's. This one's given
# cells lean most on the exercises (its training loop calls the student's gpt_backward).
UNTOUCHED_IN_MAKE_TEST = "12-induction-gpt"


def core_variants(lesson: str) -> list[Variant]:
    """The fixtures `make test` grades of a lesson: the reference and one common mistake (and, for
    UNTOUCHED_IN_MAKE_TEST, the untouched release).

    The mistake is the first fixture that loses some exercises' points with its locked cells intact.
    The other fixtures are graded by `make test-all` (tests marked `more_cases`).
    """
    every = variants(lesson)
    mistake = next((v for v in every if isinstance(v.lost, list) and v.lost and not v.replace and not v.delete), None)
    core = {"reference", "untouched"} if lesson == UNTOUCHED_IN_MAKE_TEST else {"reference"}
    return [v for v in every if v.name in core or v is mistake]


def core_cheat(lesson: str) -> str | None:
    """The cheat `make test` grades of a lesson (the first of its file), or None; the others are `more_cases`.

    A cheat of the same name in several lessons is the same attack on the same harness (such as
    patching `np.allclose`): `make test` grades it once, in the first lesson that has it first.
    """
    first = _first_cheats()
    name = first.get(lesson)
    return name if name is not None and next(ls for ls, n in first.items() if n == name) == lesson else None


@functools.cache
def _first_cheats() -> dict[str, str]:
    """lesson -> the first cheat of its file, in lesson order."""
    return {lesson: next(iter(cheats(lesson))) for lesson in cheat_lessons() if cheats(lesson)}


def cheat_lessons() -> list[str]:
    return sorted(p.stem for p in CHEATS.glob("*.toml"))


def cheats(lesson: str) -> dict[str, tuple[Variant, list[str]]]:
    """name -> (the submission, the test cells whose in-kernel verdict it fools)."""
    spec = tomllib.loads((CHEATS / f"{lesson}.toml").read_text())
    return {name: (Variant(name=name, **{k: v for k, v in fields.items() if k != "fools"}), fields.get("fools", []))
            for name, fields in spec.items()}


def strip_markers(source: str) -> str:
    """A solution cell's code as the reference answer: the region markers removed."""
    markers = ("### BEGIN SOLUTION", "### END SOLUTION")
    return "\n".join(line for line in source.splitlines() if not any(m in line for m in markers))


def reference_answers(lesson: str) -> dict[str, str]:
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    return {cell_roles.grade_id(cell): strip_markers(cell.source) for cell in nb.cells
            if cell_roles.kind(cell) == "solution"}


def build(lesson: str, release: Path, variant: Variant) -> nbformat.NotebookNode:
    """The notebook a student following `variant` would hand in."""
    nb = nbformat.read(release, as_version=4)
    if variant.untouched:
        return nb
    answers = {**reference_answers(lesson), **variant.answers}
    unknown = (set(variant.answers) | set(variant.replace) | set(variant.delete)) - set(cell_roles.cells_by_id(nb))
    assert not unknown, f"{lesson}/{variant.name}: no cells with grade_id {sorted(unknown)}"
    kept = []
    for cell in nb.cells:
        grade_id = cell_roles.grade_id(cell)
        if grade_id in variant.delete:
            continue
        if grade_id in variant.replace:
            cell.source = variant.replace[grade_id]
        elif cell_roles.kind(cell) == "solution":
            cell.source = answers[grade_id]
        kept.append(cell)
    nb.cells = kept
    return nb


def points_of(release: Path) -> dict[str, float]:
    """grade_id -> points of every autograded test cell of a released notebook file."""
    return cell_roles.test_points(nbformat.read(release, as_version=4))


def expected_scores(release: Path, variant: Variant) -> dict[str, float]:
    points = points_of(release)
    lost = set(points) if variant.lost == "all" else set(variant.lost)
    assert lost <= set(points), f"{variant.name}: lost names unknown test cells {sorted(lost - set(points))}"
    return {grade_id: 0.0 if grade_id in lost else float(p) for grade_id, p in points.items()}


def region_lines(source: str, begin: str, end: str) -> list[str]:
    """Lines strictly between `### BEGIN x` and `### END x` markers."""
    inside, lines = False, []
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def lesson_in_path(path: str) -> str | None:
    """The lesson a file belongs to, when a part of its path is a lesson id (or `<id>.ipynb`)."""
    from grader.course import lesson_ids

    known = set(lesson_ids())
    return next((part.removesuffix(".ipynb") for part in Path(path).parts if part.removesuffix(".ipynb") in known),
                None)


def may_show(path: str, lesson: str) -> bool:
    """Whether a file may hold `lesson`'s answers: only a later lesson's, which builds on them
    (Lesson 3 provides Lesson 1's `attention`); never the lesson's own, an earlier one's or any other file."""
    owner = lesson_in_path(path)
    return owner is not None and owner > lesson


def secret_lines(lesson: str, regions: tuple[str, ...] = ("SOLUTION", "HIDDEN TESTS")) -> set[str]:
    """Solution and hidden-test lines of a reference notebook that appear nowhere else in it.

    A line that the lesson also shows in visible cells (a closing bracket, `return out`) is not a
    secret; every other line of reasonable length is.
    """
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    secrets, visible = set(), set()
    for cell in nb.cells:
        hidden = [line for region in regions for line in region_lines(cell.source, f"BEGIN {region}", f"END {region}")]
        secrets.update(hidden)
        visible.update(line.strip() for line in cell.source.splitlines() if line.strip() not in hidden)
    return {line for line in secrets - visible if len(line) >= 12}


# ---------------------------------------------------------------- working answers, found by running hidden checks

CASE_SECONDS = 3.0  # the references take milliseconds on every hidden case


class OutOfTime(BaseException):  # not an Exception: a candidate's own `except Exception` cannot swallow it
    pass


RETRY_SECONDS = 0.01


def in_finaliser(frame) -> bool:
    """Whether `frame` runs inside an object's `__del__` (a garbage collection that happened to fall in the
    time limit): an exception raised there never reaches the caller."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def time_limit(seconds: float, *, cpu: bool = False):
    """OutOfTime after `seconds` of wall-clock time; with `cpu`, after `seconds` of this process's CPU time
    (the same on a busy machine), or ten times that of wall-clock time (a call that waits)."""
    timers = [(signal.SIGALRM, signal.ITIMER_REAL, seconds * (10 if cpu else 1))]
    timers += [(signal.SIGPROF, signal.ITIMER_PROF, seconds)] if cpu else []
    timer_of = {number: timer for number, timer, _ in timers}

    def expire(signum, frame):
        if in_finaliser(frame):  # raised there, OutOfTime would be printed and lost: try again just after
            signal.setitimer(timer_of[signum], RETRY_SECONDS)
            return
        raise OutOfTime

    previous = [signal.signal(number, expire) for number, _, _ in timers]
    for _, timer, limit in timers:
        signal.setitimer(timer, limit)
    try:
        yield
    finally:
        for (number, timer, _), handler in zip(timers, previous, strict=True):
            signal.setitimer(timer, 0)
            signal.signal(number, handler)


def with_generators(value):
    from grader.trusted import Rng

    if isinstance(value, Rng):
        return value.generator()
    if isinstance(value, (tuple, list)):
        return type(value)(with_generators(v) for v in value)
    if isinstance(value, dict):
        return {k: with_generators(v) for k, v in value.items()}
    return value


@contextlib.contextmanager
def trusted_globals(candidate, replace: dict):
    """During the call, the globals the candidate sees hold the check's `replace_globals`, as in grading
    (grader.trusted.harness swaps them into the student's namespace): Lesson 8's checks refuse `range`."""
    scope = getattr(candidate, "__globals__", None)
    if scope is None or not replace:
        yield
        return
    absent = object()
    saved = {name: scope.get(name, absent) for name in replace}
    scope.update(replace)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is absent:
                scope.pop(name, None)
            else:
                scope[name] = value


def passes(check, cases: list, candidate, *, outputs_only: bool = False, seconds: float = CASE_SECONDS,
           cpu: bool = False, expected_of=None) -> bool:
    """True when `candidate` gives the reference's outcome on every case of this grading run.

    A candidate that returns the reference's main result (the first element of the tuple it returns,
    a layer's output before its cache) passes too. With `outputs_only`, so does one that returns a
    tuple with that main result first, and the cases that must raise are left out: what it computes
    is the answer, whatever it caches or validates. Each case gets `seconds` (of CPU time with `cpu`).
    `expected_of(i)`, if given, is the reference's outcome for `cases[i]` (kept for the next candidate).
    """
    import numpy as np

    ran = 0
    for index, case in enumerate(cases):
        if outputs_only and case.expect_raise is not None:
            continue
        expected = expected_of(index) if expected_of else check.expected(copy.deepcopy(case))
        args, kwargs = with_generators(copy.deepcopy((case.args, case.kwargs)))
        try:
            with (warnings.catch_warnings(), np.errstate(all="ignore"), time_limit(seconds, cpu=cpu),
                  trusted_globals(candidate, check.replace_globals)):
                warnings.simplefilter("ignore")
                got = candidate(*args, **kwargs)
        except OutOfTime:
            return False
        except Exception as error:  # noqa: BLE001 (a candidate that raises is not an answer)
            if case.expect_raise is None or not isinstance(error, case.expect_raise):
                return False
            continue
        if case.expect_raise is not None:
            return False
        try:
            if check.compare(expected, got) is not None and not main_result(expected, got, outputs_only):
                return False
        except Exception:  # noqa: BLE001 (an unreadable result is not an answer either)
            return False
        ran += 1
    return ran > 0 or not outputs_only


def main_result(expected, got, in_a_tuple: bool = False) -> bool:
    """True when the reference returns a tuple and `got`, an array (or with `in_a_tuple` a tuple starting
    with one), is its first element."""
    import numpy as np

    from grader.trusted import Same

    if not isinstance(expected, tuple) or not expected or not isinstance(expected[0], np.ndarray):
        return False
    if in_a_tuple and isinstance(got, tuple) and got:
        got = got[0]
    return isinstance(got, np.ndarray) and Same()(expected[0], got) is None


def searched_checks(lesson: str) -> dict:
    """grade_id -> Check of `lesson`'s hidden checks that a NumPy function can be run against in this process
    (not PyTorch's, nor a quiz's, whose key is no function of its inputs)."""
    from grader.trusted import load_spec

    spec = load_spec(lesson)
    return {} if spec is None else {grade_id: check for grade_id, check in spec.checks.items()
                                    if not check.tensors and not check.fixed_inputs}


ANSWER_SECONDS = 1.0  # of CPU time per case, for a function a lesson gives: an answer takes milliseconds


def answers_among(functions: dict, lesson: str) -> list[tuple[str, str]]:
    """(function name, grade_id) for each of `functions` that is a working answer to an exercise of `lesson`
    (`passes` with `outputs_only`, on one grading run's hidden inputs).

    The functions are a lesson's, called with the exercises' arguments: the figures they draw are
    closed, and an IPython shell that a widget of theirs created is let go (it would write its
    history at exit, into a folder the test session has removed by then)."""
    from grader.trusted.spec import seeded

    found = []
    with lesson_side_effects_undone():
        for grade_id, check in searched_checks(lesson).items():
            cases = list(check.cases(seeded(0, grade_id)))
            expected_of = functools.cache(lambda i, check=check, cases=cases: check.expected(copy.deepcopy(cases[i])))
            found += [(name, grade_id) for name, function in functions.items()
                      if passes(check, cases, function, outputs_only=True, seconds=ANSWER_SECONDS, cpu=True,
                                expected_of=expected_of)]
    return found


@contextlib.contextmanager
def lesson_side_effects_undone():
    import atexit

    import matplotlib
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    had_shell = InteractiveShell.initialized()
    try:
        with matplotlib.rc_context():
            yield
    finally:
        plt.close("all")
        if not had_shell and InteractiveShell.initialized():
            atexit.unregister(InteractiveShell.instance().atexit_operations)
            InteractiveShell.clear_instance()


def notebook_functions(nb, label: str) -> dict:
    """name -> function, for every function a notebook's code cells define at their top level.

    The cells' definitions, imports and assignments that call nothing run, in order, in one namespace
    of their own (as the notebook's would be, without its computations); a statement that fails there,
    a cell that is not Python (`%%writefile`) and IPython magics are skipped.
    """
    import ast
    import inspect

    namespace = {"__name__": label}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines())
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            simple = isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and (
                isinstance(node.value, ast.Lambda) or not any(isinstance(n, ast.Call) for n in ast.walk(node.value)))
            if simple or isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                try:
                    exec(compile(ast.Module([node], type_ignores=[]), label, "exec"), namespace)  # noqa: S102
                except Exception:  # noqa: BLE001, S112 (a definition that needs what the notebook computes)
                    continue
    return {name: value for name, value in namespace.items()
            if inspect.isfunction(value) and value.__code__.co_filename == label}


def deadlines_config(deadlines: dict[str, str], extensions: dict | None = None):
    """The course's nbgrader configuration with these `c.LatePolicy` deadlines (and extensions)."""
    config = nbgrader_config()
    config.LatePolicy.deadlines = dict(deadlines)
    config.LatePolicy.extensions = dict(extensions or {})
    return config


def every_lesson_closed():
    """The course's configuration with every lesson's deadline long past: `make dist` may publish every lesson."""
    return deadlines_config({lesson: "2000-01-01 00:00:00 UTC" for lesson in lesson_ids()})


# ---------------------------------------------------------------- batch tables (grading/batch.toml, hostile/)

def exercise(nb, which: str) -> tuple[nbformat.NotebookNode, list[nbformat.NotebookNode]]:
    """The first or last solution cell, and the test cells after it up to the next solution cell."""
    solutions = [i for i, cell in enumerate(nb.cells) if cell_roles.kind(cell) == "solution"]
    start = solutions[0] if which == "first" else solutions[-1]
    end = next((i for i in solutions if i > start), len(nb.cells))
    return nb.cells[start], [cell for cell in nb.cells[start + 1:end] if cell_roles.is_graded(cell)]


def retyped(cell, cell_type: str):
    make = {"raw": new_raw_cell, "markdown": new_markdown_cell}[cell_type]
    return make(cell.source, metadata=cell.metadata, id=cell.get("id"))


def build_notebook(lesson: str, release: Path, spec: dict) -> nbformat.NotebookNode:
    """A notebook as a table of tests/fixtures/grading/batch.toml (or the hostile suite) describes it."""
    base = spec.get("from", "reference")
    variant = {"reference": Variant("reference"), "untouched": Variant("untouched", untouched=True),
               "mistake": mistake(lesson)}[base]
    nb = build(lesson, release, variant)
    deleted = []
    for which in ("first", "last"):
        edits = spec.get(which, {})
        solution, tests = exercise(nb, which)
        if "code" in edits:
            solution.source = edits["code"].strip()
        if "append" in edits:
            function = re.search(r"^def (\w+)", solution.source, re.M).group(1)
            solution.source += "\n" + edits["append"].strip().replace("{function}", function)
        if "test" in edits:
            tests[0].source = edits["test"]
        if "test_metadata" in edits:
            cell_roles.meta(tests[0]).update(edits["test_metadata"])
        if "test_cell_metadata" in edits:  # keys of the cell's own metadata, beside nbgrader's
            tests[0].metadata.update(edits["test_cell_metadata"])
        deleted += [cell for kind, cell in (("solution", solution), ("test", tests[0]))
                    if kind in edits.get("delete", [])]
        for key, cell in (("solution_type", solution), ("test_type", tests[0])):
            if key in edits:
                nb.cells[nb.cells.index(cell)] = retyped(cell, edits[key])
        for kind in edits.get("paste", []):  # JupyterLab's copy and paste: the cell again, metadata and all
            cell = {"solution": solution, "test": tests[0]}[kind]
            copied = copy.deepcopy(cell)
            copied.id = f"pasted-{kind}-{which}"
            nb.cells.insert(nb.cells.index(cell) + 1, copied)
    deleted = {id(cell) for cell in deleted}
    nb.cells = [cell for cell in nb.cells if id(cell) not in deleted
                and not (spec.get("delete_markdown") and cell.cell_type == "markdown")]
    if spec.get("strip_metadata"):
        for cell in nb.cells:
            cell.metadata.pop("nbgrader", None)
    for extra in spec.get("extra_cells", []):  # cells the student added: {"source", "metadata", "type"}
        make = {"markdown": nbformat.v4.new_markdown_cell, "raw": new_raw_cell}.get(extra.get("type"),
                                                                                 nbformat.v4.new_code_cell)
        cell = make(extra.get("source", ""), metadata=extra.get("metadata", {}))
        nb.cells.insert(extra.get("at", len(nb.cells)), cell)
    nb.cells += [nbformat.v4.new_markdown_cell(f"note {n}") for n in range(spec.get("pad_cells", 0))]
    nb.metadata.update(spec.get("notebook_metadata", {}))
    return nb


def mistake(lesson: str) -> Variant:
    """The lesson's first common-mistake fixture that only changes answers."""
    return next(v for v in variants(lesson) if isinstance(v.lost, list) and v.lost
                and not v.replace and not v.delete)


def batch_scores(lesson: str, release: Path, spec: dict) -> dict[str, float]:
    """grade_id -> points a batch table's submission must score (its `lost`: none, all, first, last, mistake)."""
    points = points_of(release)
    lost = spec.get("lost", "none")
    if lost == "mistake":
        return expected_scores(release, mistake(lesson))
    if lost in ("first", "last"):
        lost = {cell_roles.grade_id(cell) for cell in exercise(nbformat.read(release, as_version=4), lost)[1]}
    elif isinstance(lost, list):  # test cells by grade_id
        lost = set(lost)
    else:
        lost = set(points) if lost == "all" else set()
    return {grade_id: 0.0 if grade_id in lost else p for grade_id, p in points.items()}




def hostile_cases(values: dict[str, str], files: str = "*.toml") -> dict[str, dict]:
    """The hostile suite's submissions: every TOML of tests/fixtures/hostile/ (or those matching `files`),
    `{key}` filled from `values`.

    A file's text is filled before it is parsed; `{surrogate}` becomes a lone surrogate after parsing
    (TOML cannot hold one). A submission's name may appear in one file only.
    """
    cases: dict[str, dict] = {}
    for path in sorted((FIXTURES / "hostile").glob(files)):
        text = path.read_text()
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        found = tomllib.loads(text)
        twice = set(found) & set(cases)
        assert not twice, f"{path.name}: {sorted(twice)} already named in another file"
        cases |= _with_surrogates(found)
    return cases


def _with_surrogates(value):
    if isinstance(value, str):
        return value.replace("{surrogate}", "\ud800")
    if isinstance(value, dict):
        return {_with_surrogates(key): _with_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_surrogates(item) for item in value]
    return value


def lesson_of(item) -> str | None:
    """The lesson a test item checks: an nbval cell of solutions/<id>/, a test marked `lesson(id)`, or a
    test parametrized with it.

    Any parameter whose value is a lesson id counts, whatever its name, so that a new parametrized
    test cannot forget the optional extras.
    """
    if SOLUTIONS in item.path.parents:
        return item.path.relative_to(SOLUTIONS).parts[0]
    marker = item.get_closest_marker("lesson")
    if marker is not None:
        return marker.args[0]
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    known = lesson_ids()
    return next((value for value in params.values() if isinstance(value, str) and value in known), None)


# ---------------------------------------------------------------- hostile batches

def write_download(archive: Path, lesson: str, release: nbformat.NotebookNode, cases: dict[str, dict],
                   attempt: str) -> None:
    """An LMS-style zip of `cases` (student -> batch-table spec, built on `release`), each handed in at `attempt`."""
    import zipfile

    from grader.student.submission_names import submission_filename

    with zipfile.ZipFile(archive, "w") as handle:
        for name, spec in cases.items():
            # ensure_ascii: a lone surrogate in the notebook is written as its JSON escape, as a browser would
            handle.writestr(submission_filename(lesson, name, attempt),
                            nbformat.writes(build_notebook(lesson, release, spec), ensure_ascii=True))


KEYCTL, ADD_KEY, KEYCTL_UNLINK, SESSION_KEYRING = 250, 248, 9, -3


def plant_key(description: str, payload: str) -> int:
    """Add a user key to this process's session keyring (the grader inherits it); its serial, or -1."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    data = payload.encode()
    return libc.syscall(ADD_KEY, b"user", description.encode(), data, len(data), SESSION_KEYRING)


def unlink_key(serial: int) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).syscall(KEYCTL, KEYCTL_UNLINK, serial, SESSION_KEYRING)


# ---------------------------------------------------------------- feedback pages without a gradebook

def feedback_page(nb: nbformat.NotebookNode, lesson: str, *, course: Path = ROOT, score: float = 0,
                  max_score: float = 0, late_penalty: float = 0) -> str:
    """The feedback page of `nb` as `generate_feedback` builds it for `lesson` in `course`: every step
    of the course's feedback pipeline but nbgrader's GetGrades (which reads the gradebook: each graded
    cell's `score` comes from its metadata instead, the totals from the arguments), then its exporter."""
    resources = {"nbgrader": {"assignment": lesson, "notebook": lesson, "student": "student", "score": score,
                              "max_score": max_score, "late_penalty": late_penalty}}
    page, _ = _feedback_exporter(course).from_notebook_node(copy.deepcopy(nb), resources)
    return page


@functools.cache
def _feedback_exporter(course: Path):
    """One exporter per course, as a grading process keeps one: compiling its templates takes most of a page's time."""
    from traitlets.utils.importstring import import_item

    from grader import pipeline

    config = nbgrader_config(course)
    exporter = import_item(pipeline.feedback_exporter())(config=config)
    for step in pipeline.feedback_steps():
        if not step.endswith(".GetGrades"):
            exporter.register_preprocessor(import_item(step)(config=config), enabled=True)
    return exporter


# ---------------------------------------------------------------- grades rows without a kernel

def grade_rows(lesson: str, results, points: dict[str, float], *, roster: str = "", times: dict | None = None,
               lms_late: tuple[str, ...] = (), policy=None, overrides: dict | None = None, tmp: Path | None = None):
    """grader.grading.policy.grades rows for `results`, as a run would derive them: `roster` (CSV text) applied
    to a fresh people registry, `times` (student -> datetime) as the submissions' times."""
    from grader.grading.intake.collect import Submission
    from grader.grading.intake.people import People
    from grader.grading.intake.roster import Roster
    from grader.grading.policy import grades, late

    people = People((tmp or Path("/nonexistent")) / "people.json")
    if roster:
        people.apply_roster(Roster.parse(roster))
    for result in results:
        if result.student not in people.persons:
            people.folder(result.student)
    submissions = {r.student: Submission(r.student, (times or {}).get(r.student), r.student in lms_late)
                   for r in results}
    return grades.build(lesson, results, points, people=people, submissions=submissions,
                        policy=policy or late.LatePolicy(), penalty=late.LatePenalty(), overrides=overrides or {})


def lms_import(name: str, path: Path, lesson: str, rows, points: dict[str, float], *, config=None,
               assignments: tuple[str, ...] = ()) -> tuple[list[list[str]], str]:
    """The rows of LMS `name`'s import file for grade `rows` (grade_rows), as csv reads them, and its warning."""
    import csv

    from grader.grading.intake.lms import registry
    from grader.grading.outputs.lesson_reports import grade_line

    warning = registry.get(name, config).write_import(path, lesson, [grade_line(r) for r in rows], points,
                                                      assignments=assignments)
    return list(csv.reader(path.read_text(encoding="utf-8").splitlines())), warning


def blackboard_receipt(assignment: str, username: str, name: str, submitted: str, files: dict[str, str], *,
                       comments: str = "There are no student comments for this assignment.") -> str:
    """Blackboard's receipt of one attempt (its `<Assignment>_<username>_attempt_<time>.txt`), listing `files`
    (the student's file name -> the name in the zip), as CodeGra.de's test data and parser give its form."""
    listed = "".join(f"\tOriginal filename: {own}\n\tFilename: {zipped}\n" for own, zipped in files.items())
    return (f"Name: {name} ({username})\nAssignment: {assignment}\nDate Submitted: {submitted}\nCurrent Grade: "
            "Needs Grading\n\nSubmission Field:\nThere is no student submission text data for this assignment.\n\n"
            f"Comments:\n{comments}\n\nFiles:\n{listed}\n")


def blackboard_attempt(assignment: str, username: str, name: str, when: tuple[int, ...], files: dict[str, object],
                       *, zone: str = "GMT", comments: str = "There are no student comments for this assignment."
                       ) -> dict[str, object]:
    """The entries of one attempt in Blackboard's Assignment File Download: each of `files` (the student's file
    name -> content) as `<Assignment>_<username>_attempt_<time>_<file>`, and the receipt listing them, with
    `when` (y, m, d, H, M, S) written as Blackboard's English receipts write it, in `zone`."""
    from datetime import datetime

    moment = datetime(*when)
    prefix = f"{assignment.replace(' ', '_')}_{username}_attempt_{moment:%Y-%m-%d-%H-%M-%S}"
    named = {own: f"{prefix}_{own}" for own in files}
    submitted = f"{moment:%A, %d %B %Y %H:%M:%S} o'clock {zone}"
    return {f"{prefix}.txt": blackboard_receipt(assignment, username, name, submitted, named, comments=comments),
            **{named[own]: content for own, content in files.items()}}
