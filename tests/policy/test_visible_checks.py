"""Visible test cells and given code hand out no answers: nothing a student can call passes a hidden check.

Students read the test cells. A visible check may test properties and small hand-computed cases,
but a function it defines, or an expression it computes from the exercise's own arguments, must not
be a working answer to any exercise of the lesson. Each candidate found in a test cell's visible part
is run, in this process, on one grading run's hidden inputs of every Check of the lesson's trusted
spec: a candidate that matches the reference on all of them is an answer. A candidate sees NumPy and
the lesson's provided functions as the spec knows them (`replace_globals`), and gets a few seconds
per case: one that cannot finish a case in that time could not finish it in the test cell either
(the hidden tests include cases too large to differentiate numerically, for example).

Candidates are the cell's top-level functions, its expressions of the exercise's arguments, and,
inside a function of the cell that takes the exercise's arguments by name, each expression computed
from them through the function's earlier assignments (an "independent computation" spread over
several lines is an answer too). For an exercise that returns a tuple, a candidate that gives its
first element, the main result (a layer's output before its cache), is an answer as well.

Beyond the test cells, every function a student can call or read is a candidate too: every function
that the student notebook defines outside its solution cells (given cells, test cells and sections,
before the exercise, inside it, or later in the notebook, which a student can scroll to and copy),
at a cell's top level or anywhere inside one (a check's own inner helper, a def inside a loop or a
`with`), and every such function of every other lesson's notebook that the distribution publishes
beside the lesson (all of them but those that hand out an answer to one of its exercises, which
`make dist` withholds until its deadline: grader/authoring/handouts.py). A function is an answer if
it gets at least two thirds of an exercise's hidden cases right: what it misses is an edge case or an
argument, which a student completes. Entries it leaves NaN where the reference has a number (at most
half of an array: a fully masked row, without the guard that keeps it finite) count as right, for the
same reason. A function that takes fewer arguments than the exercise is also tried against the
exercise with the float arrays it lacks set to all ones or all zeros (a LayerNorm without its gain and
bias is the answer to one with them: `gamma * unit_layer_norm(x) + beta` is one line away; a mask or
positions are never filled in, since they are the exercise). A function that draws a figure and
returns no array is passed over after its first case, and each function gets a quarter of a second of
CPU time per case (a simulation or a figure is no answer; an answer takes milliseconds). They run
in a namespace built from the notebook's cheap top-level statements (imports, definitions, and
assignments whose calls are NumPy's, math's or builtins'), with the reference answers of the other
exercises (a student who solved them has them) and the exercise's own function replaced by a stub
that raises: a helper that merely calls the function being graded does not answer it.

What the scan cannot see: a formula written inline for the notebook's own shapes, not as a function
of the exercise's arguments. Lesson 12's old `train()` scored induction heads with the weights at
(i, i - P + 1) for queries P to 2P - 2, which is the exercise's answer only when T = 2P - 1; no
expression there takes `(attn, period)`. A reviewer reads the given code for those.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import functools
import inspect
import itertools
import warnings

import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest

from grader import cell_roles
from grader.authoring.handouts import handouts
from grader.course import lesson_ids, reference_notebook
from grader.trusted import Check, Same, load_spec, spec_lessons
from grader.trusted.spec import Case, LessonSpec, seeded
from tests.support import CASE_SECONDS, OutOfTime, main_result, passes, time_limit, trusted_globals, with_generators


def pytest_generate_tests(metafunc):
    if "spec_lesson" in metafunc.fixturenames:
        metafunc.parametrize("spec_lesson", spec_lessons())


def visible_sources(lesson: str, nb: nbformat.NotebookNode | None = None) -> dict[str, str]:
    """grade_id -> the visible part (before the hidden block) of each graded test cell of the reference (or of `nb`)."""
    nb = nbformat.read(reference_notebook(lesson), as_version=4) if nb is None else nb
    return {cell_roles.grade_id(c): c.source.split("### BEGIN HIDDEN TESTS")[0]
            for c in nb.cells if c.cell_type == "code" and cell_roles.is_graded(c)}


def defined_functions(source: str, scope: dict) -> dict[str, object]:
    """Every function the cell defines at its top level (defs, and lambdas assigned to a name), run with `scope`."""
    tree = ast.parse(source)
    kept = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda))]
    namespace = dict(scope)
    exec(compile(ast.Module(kept, type_ignores=[]), "<test cell>", "exec"), namespace)  # noqa: S102
    return {name: value for name, value in namespace.items() if callable(value) and name not in scope}


def signature_of(parameters) -> str:
    """The text of a parameter list: names, or an inspect.Signature (whose defaults are kept)."""
    return str(parameters)[1:-1] if isinstance(parameters, inspect.Signature) else ", ".join(parameters)


def parameter_names(parameters) -> list[str]:
    return list(parameters.parameters) if isinstance(parameters, inspect.Signature) else list(parameters)


def expression_answers(source: str, parameters, scope: dict) -> dict[str, object]:
    """Each expression of the cell built only from `parameters` (and NumPy), as a function of them."""
    signature, parameters = signature_of(parameters), parameter_names(parameters)
    known = set(parameters) | set(scope) | set(dir(builtins))
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.expr) or isinstance(node, (ast.Name, ast.Constant, ast.Starred, ast.Slice)):
            continue
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if not names & set(parameters) or not names <= known:
            continue
        if any(isinstance(n, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp, ast.NamedExpr))
               for n in ast.walk(node)):
            continue  # their own names are not free: leave them out rather than guess
        text = ast.unparse(node)
        namespace = dict(scope)
        try:
            code = compile(f"def candidate({signature}):\n    return {text}\n", "<test cell>", "exec")
        except SyntaxError:
            continue  # a part of an f-string, for example: not an expression of its own
        exec(code, namespace)  # noqa: S102
        found[text] = namespace["candidate"]
    return found


def free_names(node: ast.AST) -> set[str]:
    """The names `node` reads and does not bind itself (comprehension targets, lambda arguments)."""
    loaded, bound = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
    return loaded - bound


def assigned_names(statement: ast.stmt) -> set[str] | None:
    """The names a plain assignment (`a = ...`, `a, b = ...`) binds; None for any other statement."""
    if not isinstance(statement, ast.Assign):
        return None
    names = set()
    for target in statement.targets:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                names.add(n.id)
            elif not isinstance(n, (ast.Tuple, ast.List, ast.Store)):
                return None  # a subscript or attribute: not a new local
    return names


def sliced_answers(source: str, parameters, scope: dict) -> dict[str, object]:
    """Each expression of a cell function that takes `parameters`, computed from them through its assignments.

    The candidate runs the function's earlier plain assignments whose right-hand sides read only the
    parameters, NumPy, the cell's own helpers and locals so computed, then returns the expression.
    """
    arguments = ast.parse(f"def candidate({signature_of(parameters)}): pass").body[0].args  # defaults kept
    parameters = parameter_names(parameters)
    tree = ast.parse(source)
    found = {}
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or not set(parameters) <= {a.arg for a in function.args.args}:
            continue
        known = set(parameters) | set(scope) | set(dir(builtins))
        kept: list[ast.stmt] = []
        derived: set[str] = set()
        for statement in function.body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.expr) or isinstance(node, (ast.Constant, ast.Starred, ast.Slice)):
                    continue
                if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
                    continue  # an assignment's target
                names = free_names(node)
                if not names & derived or not names <= known | derived:
                    continue  # expression_answers has those of the parameters alone
                text = ast.unparse(node)
                if text in found:
                    continue
                body = kept + [ast.Return(node)]
                definition = ast.FunctionDef(name="candidate", args=copy.deepcopy(arguments), body=body,
                                             decorator_list=[], returns=None, type_params=[])
                module = ast.fix_missing_locations(ast.Module([definition], type_ignores=[]))
                namespace = dict(scope)
                exec(compile(module, "<test cell>", "exec"), namespace)  # noqa: S102
                found[text] = namespace["candidate"]
            names = assigned_names(statement)
            if names is None:
                continue
            if free_names(statement.value) <= known | derived:
                kept.append(statement)
                derived |= names
            else:
                derived -= names
    return found


NEAR = 1e-3  # a result within 0.1% of the reference's is the answer but for a constant (an eps, say)


LOOSENED: dict[int, tuple[Check, Check]] = {}


def loosened(check: Check) -> Check:
    """The check with its comparison widened to NEAR, made once per check (a Check checks its spec when made)."""
    kept = LOOSENED.get(id(check))
    if kept is None or kept[0] is not check:
        wide = check
        if isinstance(check.compare, Same):
            wide = dataclasses.replace(check, compare=Same(rtol=max(NEAR, check.compare.rtol), atol=NEAR * 1e-3,
                                                           array_like=check.compare.array_like))
        kept = LOOSENED[id(check)] = (check, wide)
    return kept[1]


def nearly_passes(check: Check, cases: list[Case], candidate) -> bool:
    """True when `candidate` gives the reference's outcome, to 0.1%, on at least two thirds of the cases (and
    three): an answer but for an edge case, an argument or a constant, which a student can see and complete."""
    check = loosened(check)
    allowed_failures = len(cases) - max(3, -(-2 * len(cases) // 3))  # at most a third of the cases
    failures = 0
    for case in cases:
        passed = case_passes(check, case, candidate)
        if passed is None:
            return False  # a result of no kind the reference gives (None, a figure): no case will do
        if not passed:
            failures += 1
            if failures > allowed_failures:
                return False
    return True


def required_positional(candidate) -> int | None:
    """How many positional arguments `candidate` requires, or None when it takes any number or has no signature."""
    try:
        parameters = inspect.signature(candidate).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in parameters)


NEUTRAL_FILLS = (np.ones_like, np.zeros_like)
MOST_MISSING = 3  # 2**3 completions per candidate at most


def floats(value) -> bool:
    return isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating)


def completions(check: Check, cases: list[Case], candidate):
    """(cases, candidate) pairs to try: as they are, and, for a function that requires fewer positional
    arguments than the exercise and lacks only arrays (a gain and a bias, not a block size), the cases with
    each array it lacks set to all ones or all zeros (each combination), the function called with the
    arguments and keywords it takes."""
    yield cases, candidate
    taken, required = required_positional(candidate), required_positional(check.reference)
    if taken is None or required is None or not 0 < required - taken <= MOST_MISSING:
        return
    if not all(len(case.args) >= required and all(floats(value) for value in case.args[taken:required])
               for case in cases):  # a gain or a bias: never a mask or positions, which are the exercise
        return

    parameters = inspect.signature(candidate).parameters.values()
    any_keyword = any(p.kind == p.VAR_KEYWORD for p in parameters)
    accepted = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def shortened(*args, **kwargs):  # the keywords it takes (an eps, an axis) pass through; the others are dropped
        return candidate(*args[:taken], **{k: v for k, v in kwargs.items() if any_keyword or k in accepted})

    shortened.reads, shortened.outcomes = taken, {}  # what it reads of a case, and its outcome on each (call_outcome)

    for fills in itertools.product(NEUTRAL_FILLS, repeat=required - taken):
        yield completed_cases(cases, taken, required, fills), shortened


COMPLETED: dict[tuple, tuple[list, list]] = {}  # the same completed cases for every candidate (their outcomes are kept)


def completed_cases(cases: list[Case], taken: int, required: int, fills: tuple) -> list[Case]:
    key = (id(cases), taken, required, fills)
    kept = COMPLETED.get(key)
    if kept is None or kept[0] is not cases:
        completed = [dataclasses.replace(case, args=case.args[:taken] + tuple(
            fill(value) for fill, value in zip(fills, case.args[taken:required], strict=True)) + case.args[required:])
            for case in cases]
        kept = COMPLETED[key] = (cases, completed)
    return kept[1]


def unguarded(expected, got):
    """`got` with the entries it leaves NaN or infinite, where the reference has a number, taken from the
    reference, if they are at most half of an array (a fully masked row that an answer without its guard
    turns into NaN: the guard is the edge case a student completes); `got` as it is otherwise."""
    if isinstance(expected, tuple) and isinstance(got, tuple) and len(expected) == len(got):
        return tuple(unguarded(e, g) for e, g in zip(expected, got, strict=True))
    if not (isinstance(expected, np.ndarray) and isinstance(got, np.ndarray) and expected.shape == got.shape
            and np.issubdtype(got.dtype, np.inexact) and np.issubdtype(expected.dtype, np.number)):
        return got
    missing = ~np.isfinite(got) & np.isfinite(expected)
    if not missing.any() or 2 * missing.sum() > missing.size:
        return got
    return np.where(missing, expected, got)


EXPECTED: dict[tuple[int, int], tuple[object, Case, object]] = {}  # the reference's outcome, once per case
REJECTED = object()
RESULT_KINDS = (np.ndarray, np.generic, tuple, list, dict, int, float, complex, bool, str)


def expected_outcome(check: Check, case: Case):
    """The reference's outcome on `case` (REJECTED if the reference itself raises), computed once."""
    kept = EXPECTED.get((id(check.reference), id(case)))
    if kept is not None and kept[0] is check.reference and kept[1] is case:
        return kept[2]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = check.expected(copy.deepcopy(case))
    except Exception:  # noqa: BLE001 (a completed case the reference itself rejects counts against the candidate)
        expected = REJECTED
    EXPECTED[id(check.reference), id(case)] = (check.reference, case, expected)
    return expected


def drew(before: set[int]) -> bool:
    """Whether figures were opened since `before` (the numbers of the figures then open); they are closed."""
    opened = set(plt.get_fignums()) - before
    for number in opened:
        plt.close(number)
    return bool(opened)


GIVEN_SECONDS = 0.25  # of CPU time per case: the references take milliseconds; a simulation or a plot is no answer


def call_outcome(check: Check, case: Case, candidate) -> tuple:
    """(the exception it raised, OutOfTime, or None; its result; whether it drew a figure), for `candidate` on
    `case`. A completed candidate (`completions`) reads only the arguments it takes, the same in every completion
    of a case: its outcome is computed once for all of them."""
    memo, key = getattr(candidate, "outcomes", None), None
    if memo is not None:
        key = (tuple(map(id, case.args[:candidate.reads])), id(case.kwargs))
        if key in memo:
            return memo[key][1]
    args, kwargs = with_generators(copy.deepcopy((case.args, case.kwargs)))
    figures = set(plt.get_fignums())
    try:
        with (warnings.catch_warnings(), np.errstate(all="ignore"), time_limit(GIVEN_SECONDS, cpu=True),
              trusted_globals(candidate, check.replace_globals)):
            warnings.simplefilter("ignore")
            outcome = (None, candidate(*args, **kwargs))
    except OutOfTime:
        outcome = (OutOfTime, None)
    except Exception as error:  # noqa: BLE001 (a candidate that raises is not an answer)
        outcome = (error, None)
    outcome += (drew(figures),)
    if memo is not None:
        memo[key] = ((case.args, case.kwargs), outcome)  # the arguments kept alive: their ids stay theirs
    return outcome


def case_passes(check: Check, case: Case, candidate) -> bool | None:
    """True when `candidate` gives the reference's outcome on this case, but for the entries it leaves NaN
    (`unguarded`); None when its result is of no kind a reference returns (None, a figure, an object), or
    when it drew a figure and returned no array (a figure's function: no other case makes it an answer)."""
    expected = expected_outcome(check, case)
    if expected is REJECTED:
        return False
    raised, got, drawn = call_outcome(check, case, candidate)
    if raised is OutOfTime:
        return False
    if raised is not None:
        if drawn:
            return None  # a figure's function, given arguments it cannot draw: it draws, it computes no answer
        return case.expect_raise is not None and isinstance(raised, case.expect_raise)
    if drawn and not isinstance(got, (np.ndarray, tuple)):
        return None
    if case.expect_raise is not None:
        return False
    if not isinstance(got, RESULT_KINDS):
        return None
    try:
        got = unguarded(expected, got)
        return check.compare(expected, got) is None or main_result(expected, got)
    except Exception:  # noqa: BLE001 (an unreadable result is not an answer either)
        return False


def answers_in_test_cells(lesson: str, nb: nbformat.NotebookNode | None = None) -> list[str]:
    spec = load_spec(lesson)
    provided = {name: f for check in spec.checks.values() for name, f in check.replace_globals.items()}
    found = []
    for grade_id, source in visible_sources(lesson, nb).items():
        for answered_id, check in spec.checks.items():
            if check.tensors or check.fixed_inputs:
                continue  # PyTorch functions, and quizzes whose keys are no function of inputs
            scope = {"np": np, "numpy": np, **{n: f for n, f in provided.items() if n != check.function}}
            parameters = inspect.signature(check.reference)
            helpers = defined_functions(source, scope)
            candidates = (helpers | expression_answers(source, parameters, scope)
                          | sliced_answers(source, parameters, scope | helpers))
            cases = list(check.cases(seeded(0, answered_id)))
            found += [f"{grade_id}: {name} answers {answered_id} ({check.function})"
                      for name, candidate in candidates.items() if passes(check, cases, candidate)]
    return found


SAFE_MODULES = {"np", "numpy", "math"}


def cheap(statement: ast.stmt) -> bool:
    """A top-level statement worth running to build the namespace: an import, a definition, or an
    assignment whose calls are all NumPy's, math's or builtins' (no training loop, no figure)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return True
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return False
    for node in ast.walk(statement.value):
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.value if not isinstance(root, ast.Call) else root.func
            if not isinstance(root, ast.Name) or not (root.id in SAFE_MODULES or root.id in dir(builtins)):
                return False
    return True


def raises_instead(name: str):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"{name} is the exercise being graded")
    return stub


def inner_definitions(statement: ast.stmt) -> list[ast.FunctionDef]:
    """The functions `statement` defines below its top level: inside a function (a check's own helper), or
    inside a loop, a `with` or an `if`, none of which the namespace runs. Methods are left out (they take self)."""
    found: list[ast.FunctionDef] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                continue
            if isinstance(child, ast.FunctionDef) and not top:
                found.append(child)
            visit(child, top=False)

    visit(ast.Module([statement], type_ignores=[]), top=True)
    if isinstance(statement, ast.FunctionDef):
        return found
    return [node for node in found if node is not statement]


def given_functions(nb: nbformat.NotebookNode) -> tuple[dict, dict[str, object]]:
    """(namespace, label -> function): every function the notebook defines outside its solution cells, at a
    cell's top level (a def, or a lambda given a name) or anywhere inside one (`check_x.<locals>.helper`),
    each as it was defined (a name defined twice gives two candidates), with the notebook's namespace as globals."""
    namespace: dict = {"__name__": "lesson"}
    functions: dict[str, object] = {}

    def run(statement: ast.stmt) -> bool:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"), time_limit(CASE_SECONDS):
                warnings.simplefilter("ignore")
                exec(compile(ast.Module([statement], type_ignores=[]), "<lesson>", "exec"), namespace)  # noqa: S102
        except BaseException:  # noqa: BLE001 (a statement that fails or runs long only leaves its name undefined)
            return False
        return True

    def keep(label: str, function) -> None:
        if callable(function) and all(function is not f for f in functions.values()):
            functions[label if label not in functions else f"{label} (again, {len(functions)})"] = function

    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source.split("### BEGIN HIDDEN TESTS")[0]
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        solution = cell_roles.kind(cell) == "solution"
        for statement in tree.body:
            if cheap(statement) and run(statement) and not solution:
                if isinstance(statement, ast.FunctionDef):
                    keep(statement.name, namespace.get(statement.name))
                elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda):
                    for target in statement.targets:
                        if isinstance(target, ast.Name):
                            keep(target.id, namespace.get(target.id))
            if solution:
                continue
            outer = statement.name if isinstance(statement, ast.FunctionDef) else "<cell>"
            for inner in inner_definitions(statement):
                hidden = copy.deepcopy(inner)
                hidden.name = f"_inner_{len(functions)}_{inner.name}"  # its own global name: it shadows nothing
                if run(hidden):
                    keep(f"{outer}.<locals>.{inner.name}", namespace.pop(hidden.name))
    return namespace, functions


@functools.cache
def lesson_functions(lesson: str) -> tuple[dict, dict[str, object]]:
    """given_functions of the lesson's reference notebook (the student's, with the answers of its exercises)."""
    return given_functions(nbformat.read(reference_notebook(lesson), as_version=4))


def published_with(lesson: str) -> list[str]:
    """The other lessons whose notebooks a student can read while `lesson` is open: every lesson of the course
    but those that hand out a working answer to one of its exercises (grader/authoring/handouts.py), which
    `make dist` withholds until its deadline has passed."""
    return [other for other in lesson_ids() if other != lesson
            and not any(handout.lesson == lesson for handout in handouts(other))]


def answers_among_given_functions(lesson: str, nb: nbformat.NotebookNode | None = None,
                                  other_lessons: list[str] | None = None) -> list[str]:
    """Each function a student can read (outside the solution cells of the lesson's notebook, and of every
    notebook published beside it) that passes, or all but passes, a hidden check of the lesson."""
    spec = load_spec(lesson)
    own = lesson_functions(lesson) if nb is None else given_functions(nb)
    others = published_with(lesson) if other_lessons is None else other_lessons
    sources = [("", *own)] + [(f"{other}'s ", *lesson_functions(other)) for other in others]
    found = []
    for grade_id, check in spec.checks.items():
        if check.tensors or check.fixed_inputs:
            continue
        cases = list(check.cases(seeded(0, grade_id)))
        namespace, _ = own
        kept = namespace.get(check.function)
        namespace[check.function] = raises_instead(check.function)
        try:
            for where, _, functions in sources:
                for label, candidate in functions.items():
                    if where == "" and label == check.function:
                        continue
                    if any(nearly_passes(check, tried, f) for tried, f in completions(check, cases, candidate)):
                        found.append(f"{grade_id}: the function {where}{label} answers it, or all but an edge "
                                     f"case ({check.function})")
        finally:
            namespace[check.function] = kept
    return found


@pytest.mark.more_cases
def test_no_function_a_student_can_call_is_an_answer(spec_lesson):
    found = answers_among_given_functions(spec_lesson)
    assert not found, ("a function that the lesson gives, or defines in a test cell or an earlier section, passes an "
                       "exercise's hidden checks; give less, or check properties instead:\n" + "\n".join(found))


def test_no_test_cell_holds_a_working_answer(spec_lesson):
    found = answers_in_test_cells(spec_lesson)
    assert not found, ("a visible test cell holds an answer to an exercise of its own lesson; check properties "
                       "and small hand-computed cases instead:\n" + "\n".join(found))


def test_the_search_finds_an_answer_planted_in_a_test_cell():
    """A lesson's own reference, pasted into a visible cell as a def or as an expression, is found."""
    spec = load_spec("06-causal-masks")
    source = visible_sources("06-causal-masks")["test_causal_mask"]
    check = spec.checks["test_causal_mask"]
    cases = list(check.cases(seeded(0, "test_causal_mask")))
    assert passes(check, cases, check.reference)
    planted = source + "\nexpected = np.arange(T)[None, :] <= np.arange(T)[:, None]\n"
    assert any("np.arange(T)" in name for name in expression_answers(planted, ["T"], {"np": np})
               if passes(check, cases, expression_answers(planted, ["T"], {"np": np})[name]))
    planted = source + "\ndef _known_good(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n"
    assert passes(check, cases, defined_functions(planted, {"np": np})["_known_good"])



def test_the_search_follows_a_computation_spread_over_several_lines():
    """An answer built step by step inside a check function is found, and so is a layer's output without its cache."""
    spec = load_spec("06-causal-masks")
    check = spec.checks["test_causal_mask"]
    cases = list(check.cases(seeded(0, "test_causal_mask")))
    planted = ("def check_causal_mask(T):\n"
               "    rows = np.arange(T)\n"
               "    later = rows[None, :]\n"
               "    assert causal_mask(T).shape == (T, T)\n"
               "    assert np.array_equal(causal_mask(T), later <= rows[:, None])\n")
    found = sliced_answers(planted, ["T"], {"np": np})
    assert not any(passes(check, cases, f) for f in expression_answers(planted, ["T"], {"np": np}).values()), (
        "no single expression of T alone holds the answer")
    assert passes(check, cases, found["later <= rows[:, None]"])
    layer = load_spec("03-parallel-heads").checks["test_multi_head_attention_forward"]
    layer_cases = list(layer.cases(seeded(0, "test_multi_head_attention_forward")))
    assert passes(layer, layer_cases, lambda *args: layer.reference(*args)[0])
    assert not passes(layer, layer_cases, lambda *args: layer.reference(*args)[1]["concat"])


OLD_ANSWERS = {  # issue 40: the answers in plain sight of the notebooks before the fix, and where they were
    "04-output-projection": [("test_dims_changed_by_dropping", "expected answers test_dims_changed_by_dropping")],
    "11-transformer-block": [("test_layer_norm", "the function _layer_norm_tiny_eps answers it"),
                             ("test_layer_norm", "the function unit_layer_norm answers it")],
    "12-induction-gpt": [("test_cross_entropy", "the function reference_loss answers it")],
}
OLD_COMMIT = "d107168"  # the notebooks and hidden checks as issue 40 found them


def _git_show(path: str, commit: str = OLD_COMMIT) -> str | None:
    import subprocess

    from grader.course import ROOT

    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def _old_spec(lesson: str, tmp_path, commit: str = OLD_COMMIT,
              checks_path: str = "grader/trusted/specs/{lesson}.py") -> LessonSpec:
    """The lesson's hidden checks as they were at `commit` (some of its exercises have since been replaced)."""
    import importlib.util
    import sys

    path = tmp_path / f"old_checks_{lesson.replace('-', '_')}.py"
    path.write_text(_git_show(checks_path.format(lesson=lesson), commit))
    name = path.stem
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return LessonSpec(lesson, dict(module.CHECKS))


@pytest.mark.more_cases
@pytest.mark.parametrize("old_lesson", sorted(OLD_ANSWERS))
def test_the_scan_finds_the_answers_issue_40_found(old_lesson, tmp_path, monkeypatch):
    """Run on the notebooks and hidden checks of before the fix (from git), the scan reports what the review found."""
    shown = _git_show(f"solutions/{old_lesson}/{old_lesson}.ipynb")
    if shown is None:
        pytest.skip(f"no git history with commit {OLD_COMMIT} here (a zip download)")
    old = nbformat.reads(shown, as_version=4)
    monkeypatch.setitem(globals(), "load_spec", lambda lesson: _old_spec(lesson, tmp_path))
    found = answers_in_test_cells(old_lesson, old) + answers_among_given_functions(old_lesson, old)
    for grade_id, words in OLD_ANSWERS[old_lesson]:
        assert any(line.startswith(grade_id) and words in line for line in found), (grade_id, words, found)


def test_a_helper_without_the_gain_and_bias_is_completed_with_the_keywords_it_takes():
    """A LayerNorm without gain and bias answers Lesson 11's Exercise 1 once they are ones and zeros; the eps
    each case gives reaches it (a helper called with its own default eps would miss every case below)."""
    check = load_spec("11-transformer-block").checks["test_layer_norm"]
    cases = [dataclasses.replace(case, kwargs={**case.kwargs, "eps": 10.0})  # an eps far from any default
             for case in check.cases(seeded(0, "test_layer_norm")) if len(case.args) == 3]

    def unit_layer_norm(x, eps=1e-5):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)

    assert len(cases) >= 3 and not nearly_passes(check, cases, unit_layer_norm)  # as it is, it lacks gamma and beta
    assert any(nearly_passes(check, tried, f) for tried, f in completions(check, cases, unit_layer_norm))


ISSUE_50_COMMIT = "6bf6ba4"  # Lesson 13 as issue 50 found it: its Exercise 3 test cell defined _plain_cross_attention


def test_the_scan_finds_the_answer_issue_50_found(tmp_path, monkeypatch):
    """The locked test cell of Lesson 13's Exercise 3, after Exercise 1, defined a cross-attention that is the
    answer to Exercise 1 but for the guard of a fully masked row (which it leaves NaN): the scan reports it."""
    lesson = "13-cross-attention"
    shown = _git_show(f"solutions/{lesson}/{lesson}.ipynb", ISSUE_50_COMMIT)
    if shown is None:
        pytest.skip(f"no git history with commit {ISSUE_50_COMMIT} here (a zip download)")
    old = nbformat.reads(shown, as_version=4)
    monkeypatch.setitem(globals(), "load_spec", lambda lesson: _old_spec(lesson, tmp_path, ISSUE_50_COMMIT,
                                                                          "solutions/{lesson}.checks.py"))
    found = answers_among_given_functions(lesson, old, other_lessons=[])
    assert ("test_cross_attention: the function _plain_cross_attention answers it, or all but an edge case "
            "(cross_attention)") in found, found


def test_the_scan_reads_functions_inside_functions_and_blocks():
    """A check's own inner helper, and a def inside a `with` block, are candidates; a method is not."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import numpy as np\n"
        "def check_it(T):\n"
        "    def expected(n):\n"
        "        return np.tril(np.ones((n, n), dtype=bool))\n"
        "    assert expected(T).shape == (T, T)\n"
        "with np.errstate(all='ignore'):\n"
        "    def also(n):\n"
        "        return np.arange(n)[None, :] <= np.arange(n)[:, None]\n"
        "class Box:\n"
        "    def method(self, n):\n"
        "        return n\n")])
    _, functions = given_functions(nb)
    assert set(functions) == {"check_it", "check_it.<locals>.expected", "<cell>.<locals>.also"}
    check = load_spec("06-causal-masks").checks["test_causal_mask"]
    cases = list(check.cases(seeded(0, "test_causal_mask")))
    assert nearly_passes(check, cases, functions["check_it.<locals>.expected"])
    assert nearly_passes(check, cases, functions["<cell>.<locals>.also"])


def test_the_scan_tries_the_notebooks_published_beside_the_lesson(monkeypatch):
    """A function of another published notebook that answers the lesson's exercise is reported under that
    notebook's name; a lesson that hands out an answer to the lesson is not published beside it."""
    assert "02-scaling" not in published_with("01-single-head")  # it hands out Lesson 1's softmax
    assert "01-single-head" in published_with("03-parallel-heads")
    split_heads = load_spec("03-parallel-heads").checks["test_split_heads"].reference
    real = lesson_functions
    planted = {"02-scaling": ({"__name__": "lesson"}, {"tidy_columns": split_heads})}
    monkeypatch.setitem(globals(), "lesson_functions", lambda lesson: planted.get(lesson) or real(lesson))
    found = answers_among_given_functions("03-parallel-heads", other_lessons=["02-scaling"])
    assert any(line.startswith("test_split_heads: the function 02-scaling's tidy_columns answers it")
               for line in found), found
