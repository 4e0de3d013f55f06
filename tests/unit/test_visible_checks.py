"""Visible test cells hand out no answers: nothing in a lesson's test cells passes that lesson's hidden checks.

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
"""

from __future__ import annotations

import ast
import builtins
import inspect

import nbformat
import numpy as np

from grader import notebook
from grader.course import reference_notebook
from grader.trusted import load_spec, spec_lessons
from grader.trusted.spec import seeded
from tests.support import passes


def pytest_generate_tests(metafunc):
    if "spec_lesson" in metafunc.fixturenames:
        metafunc.parametrize("spec_lesson", spec_lessons())


def visible_sources(lesson: str) -> dict[str, str]:
    """grade_id -> the visible part (before the hidden block) of each graded test cell of the reference."""
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    return {notebook.grade_id(c): c.source.split("### BEGIN HIDDEN TESTS")[0]
            for c in nb.cells if c.cell_type == "code" and notebook.is_graded(c)}


def defined_functions(source: str, scope: dict) -> dict[str, object]:
    """Every function the cell defines at its top level (defs, and lambdas assigned to a name), run with `scope`."""
    tree = ast.parse(source)
    kept = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda))]
    namespace = dict(scope)
    exec(compile(ast.Module(kept, type_ignores=[]), "<test cell>", "exec"), namespace)  # noqa: S102
    return {name: value for name, value in namespace.items() if callable(value) and name not in scope}


def expression_answers(source: str, parameters: list[str], scope: dict) -> dict[str, object]:
    """Each expression of the cell built only from `parameters` (and NumPy), as a function of them."""
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
            code = compile(f"def candidate({', '.join(parameters)}):\n    return {text}\n", "<test cell>", "exec")
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


def sliced_answers(source: str, parameters: list[str], scope: dict) -> dict[str, object]:
    """Each expression of a cell function that takes `parameters`, computed from them through its assignments.

    The candidate runs the function's earlier plain assignments whose right-hand sides read only the
    parameters, NumPy, the cell's own helpers and locals so computed, then returns the expression.
    """
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
                definition = ast.FunctionDef(
                    name="candidate", args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in parameters],
                                                         kwonlyargs=[], kw_defaults=[], defaults=[]),
                    body=body, decorator_list=[], returns=None, type_params=[])
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


def answers_in_test_cells(lesson: str) -> list[str]:
    spec = load_spec(lesson)
    provided = {name: f for check in spec.checks.values() for name, f in check.replace_globals.items()}
    found = []
    for grade_id, source in visible_sources(lesson).items():
        for answered_id, check in spec.checks.items():
            if check.tensors or check.fixed_inputs:
                continue  # PyTorch functions, and quizzes whose keys are no function of inputs
            scope = {"np": np, "numpy": np, **{n: f for n, f in provided.items() if n != check.function}}
            parameters = list(inspect.signature(check.reference).parameters)
            helpers = defined_functions(source, scope)
            candidates = (helpers | expression_answers(source, parameters, scope)
                          | sliced_answers(source, parameters, scope | helpers))
            cases = list(check.cases(seeded(0, answered_id)))
            found += [f"{grade_id}: {name} answers {answered_id} ({check.function})"
                      for name, candidate in candidates.items() if passes(check, cases, candidate)]
    return found


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
