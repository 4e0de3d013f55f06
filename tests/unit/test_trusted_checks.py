"""The trusted checks' pieces, no kernel needed: the strict wire format, fresh inputs per run, the
verdicts that follow only the trusted comparison, and every lesson's trusted spec
against its notebook. The cheats themselves are graded in tests/integration/test_cheats.py.
"""

from __future__ import annotations

import ast
import base64
import copy
import functools
import json
import os
import sys
from unittest import mock

import nbformat
import numpy as np
import pytest
from nbgrader import utils

from grader import cell_roles
from grader.course import ROOT, lesson_ids, reference_notebook
from grader.pipeline.inject_trusted_checks import InjectTrustedChecks
from grader.pipeline.verify_trusted_checks import VerifyTrustedChecks
from grader.trusted import HIDDEN_BLOCK, Check, SpecError, load_spec, spec_lessons, wire
from grader.trusted.prepared_checks import HARNESS, RESOURCE


def pytest_generate_tests(metafunc):
    if "spec_lesson" in metafunc.fixturenames:
        metafunc.parametrize("spec_lesson", spec_lessons())


def injected(lesson: str, **config) -> tuple[nbformat.NotebookNode, dict]:
    """The reference notebook after InjectTrustedChecks, as the kernel would receive it."""
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    resources = {"nbgrader": {"assignment": lesson, "notebook": lesson}}
    return InjectTrustedChecks(**config).preprocess(nb, resources)


def test_every_grading_run_draws_fresh_inputs(spec_lesson):
    def inputs(**config) -> dict[str, list]:
        run = injected(spec_lesson, **config)[1][RESOURCE]
        return {grade_id: [wire.encode(args) for args in p.sent] for grade_id, p in run.prepared.items()}

    first, second = inputs(), inputs()
    checks = load_spec(spec_lesson).checks
    assert set(first) == set(checks)
    for grade_id in first:
        if checks[grade_id].fixed_inputs:  # a quiz: the same calls every run, and nothing drawn from rng
            rng = np.random.default_rng(0)
            state = rng.bit_generator.state
            list(checks[grade_id].cases(rng))
            assert rng.bit_generator.state == state and first[grade_id] == second[grade_id], (
                f"{grade_id}: fixed_inputs=True, yet its cases draw from rng")
            continue
        assert first[grade_id] != second[grade_id], f"{grade_id}: two grading runs sent the same inputs"
    assert inputs(seed=7) == inputs(seed=7), "a fixed seed reproduces a grading run"


def test_injection_adds_the_harness_first_and_keeps_the_visible_checks(spec_lesson):
    nb, resources = injected(spec_lesson)
    run = resources[RESOURCE]
    assert nb.cells[0].id == run.bootstrap_id and repr(HARNESS.read_text()) in nb.cells[0].source
    for grade_id, prepared in run.prepared.items():
        cell = cell_roles.cells_by_id(nb)[grade_id]
        visible = prepared.source.split("### BEGIN HIDDEN TESTS")[0]
        assert cell.source.startswith(visible) and run.entry in cell.source
        assert "NBGRADER_EXECUTION" not in cell.source


def honest_results(run, grade_id: str, source: str):
    """The results output an honest kernel would display for the injected call in `source`."""
    call = next(line for line in source.splitlines() if line.startswith(run.entry))
    payload = ast.literal_eval(ast.parse(call).body[0].value.args[2])
    check = run.prepared[grade_id].check
    namespace, shown = {}, []
    exec(HARNESS.read_text(), namespace)  # noqa: S102
    runner = namespace["install"](run.token, wire.MIME, wire.FORMAT, sorted(wire.DTYPES), publish=shown.append,
                                  tensors=check.tensors)
    runner(grade_id, on_tensors(check.reference) if check.tensors else check.reference, payload)
    return nbformat.v4.new_output("display_data", data=json.loads(json.dumps(shown[0])))


def on_tensors(reference):
    """A NumPy reference as an honest notebook's function of a `Check.tensors` exercise: tensors in and out."""
    import torch  # only for a lesson that needs it, whose tests are skipped without it (tests/plugins/extras.py)

    def convert(value, kind, to):  # each `kind` in `value`, also inside lists and tuples, through `to`
        if isinstance(value, kind):
            return to(value)
        if isinstance(value, (list, tuple)):
            return type(value)(convert(item, kind, to) for item in value)
        return value

    def function(*args, **kwargs):
        arrays = convert(args, torch.Tensor, torch.Tensor.numpy)
        named = {key: convert(value, torch.Tensor, torch.Tensor.numpy) for key, value in kwargs.items()}
        return convert(reference(*arrays, **named), np.ndarray, torch.from_numpy)

    return function


def number(value: float):
    return nbformat.v4.new_output("execute_result", data={"text/plain": repr(value)}, execution_count=1)


OUTPUT_SCENARIOS = {  # name -> (outputs of each graded cell after execution, whether it may score)
    "honest": (lambda results, points: [results()], True),
    "honest-then-claims-partial-credit": (lambda results, points: [number(points / 2), results()], True),
    "no-results": (lambda results, points: [], False),
    "results-twice": (lambda results, points: [results(), results()], False),
    "results-from-another-run": (lambda results, points: [results(token="0" * 32)], False),
    "honest-but-stderr": (lambda results, points: [results(), nbformat.v4.new_output("stream", name="stderr",
                                                                                     text="oops\n")], False),
    "claims-full-credit-without-results": (lambda results, points: [number(points)], False),
}


@functools.cache
def _executed_honestly(lesson: str) -> tuple[nbformat.NotebookNode, dict, dict[str, dict]]:
    """The injected reference notebook, and each graded cell's honest results, with this run's token and
    with another run's (the harness runs every case: made once per lesson, copied for each scenario)."""
    nb, resources = injected(lesson)
    run = resources[RESOURCE]
    results = {}
    for cell in nb.cells:
        if (grade_id := cell_roles.grade_id(cell)) in run.prepared:
            honest = honest_results(run, grade_id, cell.source)
            replayed = copy.deepcopy(honest)  # the same results, as an earlier grading run would have sent them
            replayed.data[wire.MIME]["token"] = "0" * 32
            results[grade_id] = {None: honest, "0" * 32: replayed}
    return nb, resources, results


@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_verdict_depends_only_on_the_trusted_comparison(spec_lesson, scenario):
    """Whatever else the kernel outputs, nbgrader's own scoring follows VerifyTrustedChecks' verdict."""
    outputs, may_score = OUTPUT_SCENARIOS[scenario]
    nb, resources, results = _executed_honestly(spec_lesson)
    nb, resources = copy.deepcopy(nb), dict(resources)  # the run itself is only read
    run = resources[RESOURCE]
    graded = [c for c in nb.cells if cell_roles.grade_id(c) in run.prepared]
    for cell in graded:
        grade_id, points = cell_roles.grade_id(cell), cell_roles.points(cell)
        cell.outputs = outputs(lambda token=None, grade_id=grade_id: copy.deepcopy(results[grade_id][token]), points)
    nb, _ = VerifyTrustedChecks().preprocess(nb, resources)
    assert nb.cells[0].get("id") != run.bootstrap_id
    for cell in graded:
        score, points = utils.determine_grade(cell)
        assert score == (points if may_score else 0), cell.metadata["trusted_checks"]["message"]


def test_hidden_block_fails_closed_without_the_trusted_grader():
    """Autograding with a pipeline that lacks the trusted preprocessors scores these cells zero."""
    with mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):
        with pytest.raises(AssertionError, match="trusted grader"):
            exec(HIDDEN_BLOCK, {})  # noqa: S102
    for mode in ("validate", None):
        env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
        with mock.patch.dict(os.environ, env | ({"NBGRADER_EXECUTION": mode} if mode else {}), clear=True):
            exec(HIDDEN_BLOCK, {})  # noqa: S102


def harness_results(function, *calls, keep_args=False):
    """Run the kernel-side harness in this process and return the bundle it would display."""
    namespace, shown = {}, []
    exec(HARNESS.read_text(), namespace)  # noqa: S102
    run = namespace["install"]("token", wire.MIME, wire.FORMAT, sorted(wire.DTYPES), publish=shown.append)
    run("check", function, json.dumps(wire.encode_calls([(args, {}) for args in calls], keep_args)))
    assert len(shown) == 1
    return json.loads(json.dumps(shown[0][wire.MIME]))  # through JSON, as the message layer does


def test_wire_round_trips_values_exactly():
    values = [None, True, -3, 2.5, float("nan"), float("-inf"), 1 - 2j, "héllo", [1, (2, 3.0)], {"a": [None]},
              np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[True], [False]]), np.int64(7), np.float16(0.5),
              np.zeros((0, 3))]
    for value in values:
        bundle = harness_results(lambda v: v, (value,), keep_args=True)
        (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[1])
        assert wire.encode(outcome.result) == wire.encode(value)
        assert outcome.args == (wire.digest(wire.encode(value)),)


def test_wire_reports_what_it_cannot_carry():
    class Sub(np.ndarray):
        dtype = np.dtype("int8")  # lies about itself: the harness reads the base class instead

    for value, expected in [(object(), wire.Unsupported("object")),
                            (np.array(["text"]), wire.Unsupported("array of dtype <U4"))]:
        bundle = harness_results(lambda v=value: v, ())
        assert wire.decode_results(bundle, token="token", check="check", n_args=[None])[0].result == expected
    bundle = harness_results(lambda: np.ones(2).view(Sub), ())
    result = wire.decode_results(bundle, token="token", check="check", n_args=[None])[0].result
    assert type(result) is np.ndarray and result.dtype == np.float64
    bundle = harness_results(lambda: 1 / 0, ())
    (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[None])
    assert outcome.result == wire.Raised(("ZeroDivisionError", "ArithmeticError", "Exception", "BaseException",
                                          "object"))


@pytest.mark.needs("torch")
def test_harness_passes_tensors_for_a_tensors_check():
    """Check.tensors: arrays go in as torch tensors, tensors come back as arrays, a NumPy array is refused."""
    import torch

    def outcome(function, *args):
        namespace, shown = {}, []
        exec(HARNESS.read_text(), namespace)  # noqa: S102
        run = namespace["install"]("token", wire.MIME, wire.FORMAT, sorted(wire.DTYPES), publish=shown.append,
                                   tensors=True)
        run("check", function, json.dumps(wire.encode_calls([(args, {})], keep_args=True) | {"tensors": True}))
        bundle = json.loads(json.dumps(shown[0][wire.MIME]))
        return wire.decode_results(bundle, token="token", check="check", n_args=[len(args)])[0]

    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    seen = []

    def split(t, n):
        seen.append(type(t))
        return t.reshape(2, n, -1).transpose(1, 2), torch.ones(2, requires_grad=True) * 3, n  # a view, a grad, an int

    got = outcome(split, x, 3)
    assert seen == [torch.Tensor]
    assert wire.encode(got.result) == wire.encode((x.reshape(2, 3, 2).transpose(0, 2, 1), np.full(2, 3, np.float32), 3))
    assert got.args == (wire.digest(wire.encode(x)), wire.digest(wire.encode(3)))
    assert outcome(lambda t, n: t.zero_(), x, 3).args[0] == wire.digest(wire.encode(np.zeros_like(x))), "seen after"
    assert outcome(lambda t, n: t.numpy(), x, 3).result == wire.Unsupported("numpy.ndarray, not a torch.Tensor")
    assert outcome(lambda t, n: t.bfloat16(), x, 3).result == wire.Unsupported("tensor of dtype torch.bfloat16")
    with mock.patch.dict(sys.modules, {"torch": None}):  # a kernel without torch: every call fails
        assert outcome(lambda t, n: t, x, 3).result.name == "ModuleNotFoundError"


def test_generators_cross_as_seeds_and_report_what_was_drawn():
    """An Rng is default_rng(seed) on both sides; the state it is left in shows what the function drew."""
    from grader.trusted import Rng, call

    def two_draws(n, rngs):
        return rngs[0].standard_normal(n) + rngs[1].standard_normal(n)

    def one_draw_too_many(n, rngs):
        result = two_draws(n, rngs)
        rngs[1].standard_normal()
        return result

    args = (3, [Rng(11), Rng(12)])
    expected, states = Check("two_draws", two_draws, lambda rng: []).outcome(call(*args))
    for function, same_states in [(two_draws, True), (one_draw_too_many, False)]:
        bundle = harness_results(function, args, keep_args=True)
        (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[2], n_rngs=[2])
        assert np.array_equal(outcome.result, expected)
        assert outcome.args == tuple(wire.digest(wire.encode(a)) for a in args), (
            "a generator made from an Rng comes back as that Rng")
        assert ([wire.encode(s) for s in outcome.rngs] == [wire.encode(s) for s in states]) == same_states
    with pytest.raises(wire.Malformed):
        wire.decode_results(bundle, token="token", check="check", n_args=[2])  # states nobody asked for


def tampered(change) -> dict:
    bundle = harness_results(lambda: np.arange(3.0), ())
    change(bundle)
    return bundle


@pytest.mark.parametrize("change", [
    lambda b: b.update(token="guessed"),
    lambda b: b.update(check="test_other"),
    lambda b: b.update(format="pickle"),
    lambda b: b.update(extra=1),
    lambda b: b["cases"].append(b["cases"][0]),
    lambda b: b["cases"][0]["result"].update(dtype="|O"),
    lambda b: b["cases"][0]["result"].update(shape=[4]),
    lambda b: b["cases"][0]["result"].update(shape=[True, 3]),
    lambda b: b["cases"][0]["result"].update(data="not base64!"),
    lambda b: b["cases"][0].update(args=[{"t": "array", "dtype": "<f8", "shape": [1], "data": "AAAAAAAAAAA="}]),
    lambda b: b["cases"][0].update(args=["0" * 63 + "G"]),
    lambda b: b["cases"][0]["result"].update(code="__import__('os')"),
    lambda b: b["cases"][0].update(result={"t": "pickle", "v": base64.b64encode(b"cos\nsystem\n").decode()}),
    lambda b: b["cases"][0].update(result={"t": "int", "v": "1e9"}),
    lambda b: b["cases"][0].update(result={"t": "float", "v": 1.5}),
    lambda b: b["cases"][0].update(result={"t": "dict", "v": [["k", {"t": "none"}], ["k", {"t": "none"}]]}),
    lambda b: b["cases"][0].update(result=json.loads('{"t": "list", "v": [' * 40 + "]}" * 40)),
], ids=["token", "check", "format", "extra-key", "extra-case", "object-dtype", "shape-vs-bytes", "bool-shape",
        "not-base64", "args-not-digests", "args-bad-digest", "extra-field", "unknown-tag", "int-text", "float-number",
        "duplicate-key", "too-deep"])
def test_wire_rejects_malformed_results(change):
    bundle = tampered(change)
    with pytest.raises(wire.Malformed):
        wire.decode_results(bundle, token="token", check="check", n_args=[1 if "args" in bundle["cases"][0] else None])


def doubled(x):  # a trusted definition, sent to the kernel by Check.replace_globals
    return np.asarray(x) * 2.0


def dumped(x):  # needs json, which the kernel's definitions do not see
    return json.dumps(x)


def test_replace_globals_swaps_the_trusted_definition_in_for_each_call_only():
    """The student's function sees the spec's definition while it is called; the notebook's comes back."""
    check = Check("graded", doubled, lambda rng: [], replace_globals={"helper": doubled})
    payload = wire.encode_calls([((np.arange(3.0),), {})], keep_args=False) | {"globals": check.kernel_globals()}
    kernel = {}  # the notebook's globals, where the student's functions look `helper` up
    exec("def graded(x):\n    return helper(x)\n\ndef fails(x):\n    helper(x)\n    raise ValueError\n",  # noqa: S102
         kernel)

    def result(function):
        namespace, shown = {}, []
        exec(HARNESS.read_text(), namespace)  # noqa: S102
        run = namespace["install"]("token", wire.MIME, wire.FORMAT, sorted(wire.DTYPES), publish=shown.append)
        run("check", function, json.dumps(payload))
        bundle = json.loads(json.dumps(shown[0][wire.MIME]))
        return wire.decode_results(bundle, token="token", check="check", n_args=[None])[0].result

    def students_helper(x):
        raise NotImplementedError

    kernel["helper"] = students_helper
    np.testing.assert_array_equal(result(kernel["graded"]), [0.0, 2.0, 4.0])
    assert kernel["helper"] is students_helper, "the notebook's definition is put back after the call"
    assert result(kernel["fails"]).name == "ValueError"
    assert kernel["helper"] is students_helper, "and after a call that raised"
    del kernel["helper"]
    np.testing.assert_array_equal(result(kernel["graded"]), [0.0, 2.0, 4.0])
    assert "helper" not in kernel, "a name the notebook did not define is removed again"
    with pytest.raises(SpecError, match="uses json"):
        Check("graded", doubled, lambda rng: [], replace_globals={"helper": dumped})


# ---------------------------------------------------------------- every lesson's spec against its notebook

def test_trusted_specs_cover_every_graded_cell_of_their_lesson(spec_lesson):
    assert spec_lesson in lesson_ids(), f"solutions/{spec_lesson}.checks.py names no lesson"
    spec = load_spec(spec_lesson)
    reference = nbformat.read(reference_notebook(spec_lesson), as_version=4)
    graded = {cell_roles.grade_id(c): c for c in reference.cells if cell_roles.is_graded(c) and c.cell_type == "code"}
    assert set(spec.checks) == set(graded), "every graded test cell needs a Check, and every Check a test cell"
    for grade_id, cell in graded.items():
        assert HIDDEN_BLOCK in cell.source and cell.source.rstrip().endswith(HIDDEN_BLOCK), (
            f"{grade_id}: end the test cell with grader.trusted.HIDDEN_BLOCK, verbatim")
        assert f"{spec.checks[grade_id].function}(" in cell.source, f"{grade_id}: its visible checks should call it"


def test_no_hidden_block_without_a_trusted_spec(lesson):
    reference = nbformat.read(reference_notebook(lesson), as_version=4)
    spec = load_spec(lesson)
    for cell in reference.cells:
        if HIDDEN_BLOCK in cell.source:
            grade_id = cell_roles.grade_id(cell)
            assert spec is not None and grade_id in spec.checks, (
                f"{grade_id}: no Check in solutions/{lesson}.checks.py")


def test_lesson_style_shows_the_hidden_block_verbatim():
    assert HIDDEN_BLOCK in (ROOT / "docs" / "lesson-style.md").read_text(), "docs/lesson-style.md shows an old block"


def test_every_lesson_has_a_trusted_spec(lesson):
    # Otherwise its hidden tests would run in the student's kernel, where they can be fooled.
    assert load_spec(lesson) is not None, f"write solutions/{lesson}.checks.py (docs/lesson-style.md)"


def test_extended_precision_results_are_read_as_float64():
    """A correct float128 (longdouble) answer is not "an object the grader cannot read"."""
    bundle = harness_results(lambda: (np.arange(3, dtype=np.longdouble) / 3, np.longdouble(0.5),
                                      np.ones(2, dtype=np.clongdouble)), ())
    (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[None])
    array, scalar, complex_array = outcome.result
    assert array.dtype == np.float64 and np.allclose(array, np.arange(3) / 3)
    assert scalar == 0.5 and np.asarray(scalar).dtype == np.float64
    assert complex_array.dtype == np.complex128


def strict_results(function, *args):
    namespace, shown = {}, []
    exec(HARNESS.read_text(), namespace)  # noqa: S102
    run = namespace["install"]("token", wire.MIME, wire.FORMAT, sorted(wire.DTYPES), publish=shown.append)
    run("check", function, json.dumps(wire.encode_calls([(args, {})], False) | {"strict_floats": True}))
    bundle = json.loads(json.dumps(shown[0][wire.MIME]))
    return wire.decode_results(bundle, token="token", check="check", n_args=[None])[0].result


def test_a_function_cannot_switch_the_floating_point_rule_off():
    """Under strict_floats a warning is an error, and changing NumPy's settings to hide one fails the call."""
    saved_seterr = np.seterr  # a reference taken before the call, as a submission could keep one
    before_all = np.geterr()

    def hides_with_seterr(x):
        np.seterr(all="ignore")
        return np.log(x)

    def hides_with_a_saved_reference(x):
        old = saved_seterr(all="ignore")
        value = np.log(x)
        saved_seterr(**old)
        return value

    def hides_with_errstate(x):
        with np.errstate(all="ignore"):
            return np.log(x)

    quiet = np.errstate  # issue 27 item 8: a reference to the class saved at cell level

    def hides_with_a_saved_errstate(x):
        with quiet(invalid="ignore", divide="ignore"):
            return np.log(x)

    @np.errstate(all="ignore")
    def hides_with_a_decorator(x):
        return np.log(x)

    import contextvars

    np.seterr(all="ignore")
    quiet_context = contextvars.copy_context()  # NumPy's settings as they were here, to run code in later
    np.seterr(**before_all)

    def hides_in_a_saved_context(x):
        return quiet_context.run(np.log, x)

    def hides_in_a_thread(x):
        import threading

        out = []
        thread = threading.Thread(target=lambda: out.append(np.log(x + 1)))  # no warning: the thread is the fault
        thread.start()
        thread.join()
        return out[0]

    def removes_the_watch(x):
        import sys

        watch = sys.getprofile()
        sys.setprofile(None)
        with quiet(all="ignore"):
            value = np.log(x)
        sys.setprofile(watch)
        return value

    before = np.geterr()
    for function in (hides_with_seterr, hides_with_a_saved_reference, hides_with_errstate, hides_with_a_saved_errstate,
                     hides_with_a_decorator, hides_in_a_saved_context, hides_in_a_thread, removes_the_watch):
        result = strict_results(function, np.zeros(3))
        assert isinstance(result, wire.Raised), function.__name__
    assert strict_results(lambda x: np.log(x), np.zeros(3)).name == "FloatingPointError"
    assert np.array_equal(strict_results(lambda x: np.log(x), np.ones(3)), np.zeros(3))
    assert np.geterr() == before and np.seterr is saved_seterr, "the harness puts NumPy back as it was"
    # NumPy's own functions that use errstate inside (np.ma, isclose) are not the function changing the settings.
    assert np.array_equal(strict_results(lambda x: np.ma.log(x).filled(0.0), np.ones(3)), np.zeros(3))
    assert np.array_equal(strict_results(lambda x: np.isclose(x, x), np.ones(2)), np.ones(2, dtype=bool))


def test_a_modified_input_is_seen_even_when_the_function_swaps_the_callers_list_back():
    """Issue 27 item 9: zero the input in place, then put an untouched copy into the harness's argument list."""
    import sys

    def zero_and_hide(x):
        kept = x.copy()
        x[:] = 0
        frame = sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, list) and any(item is x for item in value):
                    value[:] = [kept if item is x else item for item in value]
            frame = frame.f_back
        return kept.sum()

    bundle = harness_results(zero_and_hide, (np.arange(1.0, 4.0),), keep_args=True)
    (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[1])
    assert outcome.result == 6.0
    assert outcome.args[0] == wire.digest(wire.encode(np.zeros(3))), "the argument it was given, as it left it"


def test_written_arguments_must_hold_what_the_reference_wrote_there():
    """Check.written_args: the caller's array after the call, not only the result, decides (a ring-buffer cache)."""
    from grader.pipeline.verify_trusted_checks import _argument_problem
    from grader.trusted.prepared_checks import Prepared

    def fill(buffer, value):  # the reference: writes slot 1 in place
        buffer[1] = value
        return float(buffer.sum())

    def into_a_copy(buffer, value):  # the same result, the caller's buffer untouched
        buffer = buffer.copy()
        buffer[1] = value
        return float(buffer.sum())

    def other_slot(buffer, value):
        buffer[0] = value
        return float(buffer.sum())

    def changes_the_value(buffer, value):
        buffer[1] = value
        return float(buffer.sum()) + 0 * value

    check = Check("fill", fill, lambda rng: iter(()), unchanged_args=True, written_args=(0,))
    sent, written = (np.zeros(3), 2.0), (np.array([0.0, 2.0, 0.0]), 2.0)
    prepared = Prepared(check=check, source="", expected=[2.0], sent=[sent], n_args=[2], written=[written])
    problems = {}
    for function in (fill, into_a_copy, other_slot, changes_the_value):
        bundle = harness_results(function, (np.zeros(3), 2.0), keep_args=True)
        (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[2])
        assert outcome.result == 2.0, function.__name__
        problems[function.__name__] = _argument_problem(prepared, 0, sent, outcome.args)
    assert problems["fill"] is None and problems["changes_the_value"] is None
    assert "argument 1 does not hold what the exercise asks it to write there in place" in problems["into_a_copy"]
    assert "argument 1 does not hold" in problems["other_slot"]
    touched = Prepared(check=check, source="", expected=[2.0], sent=[(np.zeros(3), 3.0)], n_args=[2], written=[written])
    bundle = harness_results(fill, (np.zeros(3), 2.0), keep_args=True)
    (outcome,) = wire.decode_results(bundle, token="token", check="check", n_args=[2])
    assert "modified its argument 2" in _argument_problem(touched, 0, (np.zeros(3), 3.0), outcome.args)
    with pytest.raises(SpecError, match="written_args"):
        Check("fill", fill, lambda rng: iter(()), written_args=(-1,))
