"""The two nbgrader autograde preprocessors that take the hidden tests' verdict out of the kernel.

`InjectTrustedChecks` runs just before `Execute`; `VerifyTrustedChecks` runs after `Execute`,
`IgnorePattern` and `LimitOutput`, just before `SaveAutoGrades`. `with_trusted_checks` puts them
there in any autograde pipeline. Both run in the grading process; they share what the kernel must
never see (the inputs' pristine copies, the expected results) through nbconvert's `resources`.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, SaveAutoGrades
from traitlets import Integer
from traitlets.utils.importstring import import_item

from grader.trusted import wire
from grader.trusted.spec import Case, Check, SpecError, load_spec, seeded

RESOURCE = "trusted_checks"  # key in nbconvert's resources, and of the verdicts in the notebook's metadata
HARNESS = Path(__file__).resolve().parent / "harness.py"
FAILURE = "HiddenTestFailure"


@dataclass
class Prepared:
    """One check of one grading run, as the grading process keeps it while the kernel runs."""

    check: Check
    source: str  # the test cell's source as restored from the gradebook
    expected: list[Any]  # the reference's outcome for each call
    sent: list[tuple]  # each call's positional arguments, exactly as the kernel received them
    n_args: list[int | None]  # what decode_results expects back for each call
    rngs: list[tuple] = field(default_factory=list)  # per call: the states its Rng generators must end in


@dataclass
class Run:
    token: str  # names this grading run; results carrying another token are rejected
    seed: int
    bootstrap_id: str
    entry: str  # the kernel-side name of the harness
    prepared: dict[str, Prepared]


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _with_call(source: str, call_line: str) -> str:
    """The source with its hidden-test block replaced by `call_line` (appended if it has none)."""
    lines = source.splitlines()
    begin = next((i for i, line in enumerate(lines) if "BEGIN HIDDEN TESTS" in line), None)
    end = next((i for i, line in enumerate(lines) if "END HIDDEN TESTS" in line and i > (begin or 0)), None)
    if begin is None or end is None:
        return source.rstrip("\n") + "\n" + call_line
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join([*lines[: begin + 1], indent + call_line, *lines[end:]])


class InjectTrustedChecks(NbGraderPreprocessor):
    """Before execution: choose this run's inputs and put the code that reports results in the notebook.

    For each test cell that the lesson's trusted spec grades, draw the inputs for this run, compute
    the expected results with the trusted reference (in this process), and replace the cell's
    hidden-test block with one call: run the student's function on these inputs and display the
    results. A first cell is added that installs the kernel-side harness before any student code.
    """

    seed = Integer(None, allow_none=True,
                   help="Seed for the hidden tests' inputs; by default a fresh random seed per notebook and run. "
                        "Set it only to reproduce a past grading run (the seed is in the autograded notebook's "
                        "metadata).").tag(config=True)

    def preprocess(self, nb, resources):
        for holder in [nb, *nb.cells]:  # only VerifyTrustedChecks writes these records, never a submission
            holder.metadata.pop(RESOURCE, None)
        spec = load_spec(resources["nbgrader"]["assignment"])
        if spec is None:
            return nb, resources
        token = secrets.token_hex(16)
        seed = self.seed if self.seed is not None else secrets.randbits(63)
        run = Run(token=token, seed=seed, bootstrap_id=f"trusted-checks-{token[:12]}",
                  entry=f"_trusted_checks_{token[:16]}", prepared={})
        for cell in nb.cells:
            grade_id = _grade_id(cell)
            if cell.cell_type != "code" or not utils.is_grade(cell) or grade_id not in spec.checks:
                continue
            if grade_id in run.prepared:
                raise SpecError(f"two test cells have grade_id {grade_id}")
            check = spec.checks[grade_id]
            cases = list(check.cases(seeded(seed, grade_id)))
            if not cases or not all(isinstance(case, Case) for case in cases):
                raise SpecError(f"{grade_id}: cases(rng) must yield call(...) objects")
            payload = wire.encode_calls(((case.args, case.kwargs) for case in cases), check.unchanged_args)
            if check.replace_globals:  # trusted definitions the kernel swaps in during the calls
                payload["globals"] = check.kernel_globals()
            if check.tensors:  # the kernel passes the arrays as torch tensors and sends tensors back as arrays
                payload["tensors"] = True
            if check.strict_floats:  # the kernel calls the function with NumPy's floating-point warnings as errors
                payload["strict_floats"] = True

            def received(payload=payload):  # a fresh copy of every call's arguments, as the kernel decodes them
                return [(tuple(wire.decode(a) for a in call["args"]), {k: wire.decode(v) for k, v in call["kwargs"]})
                        for call in payload["cases"]]

            outcomes = [check.outcome(Case(args, kwargs, case.expect_raise))
                        for (args, kwargs), case in zip(received(), cases, strict=True)]
            expected = [result for result, _ in outcomes]
            sent = [args for args, _ in received()]
            run.prepared[grade_id] = Prepared(
                check=check, source=cell.source, expected=expected, sent=sent,
                n_args=[len(args) if check.unchanged_args else None for args in sent],
                rngs=[states for _, states in outcomes])
            text = json.dumps(payload, separators=(",", ":"))
            cell.source = _with_call(cell.source, f"{run.entry}({grade_id!r}, {check.function}, {text!r})")
        missing = sorted(set(spec.checks) - set(run.prepared))
        if missing:
            self.log.warning("trusted checks without a test cell in the notebook: %s", ", ".join(missing))
        if run.prepared:
            nb.cells.insert(0, self._bootstrap(run))
            resources[RESOURCE] = run
        return nb, resources

    @staticmethod
    def _bootstrap(run: Run):
        # The harness imports torch in the kernel only for a run that passes tensors (Check.tensors).
        tensors = ", tensors=True" if any(p.check.tensors for p in run.prepared.values()) else ""
        source = "\n".join([
            "# Added by the grader for this grading run, and removed before the notebook is saved.",
            "_trusted_namespace = {}",
            f"exec({HARNESS.read_text()!r}, _trusted_namespace)",
            f"{run.entry} = _trusted_namespace['install']({run.token!r}, {wire.MIME!r}, {wire.FORMAT!r}, "
            f"{sorted(wire.DTYPES)!r}{tensors})",
            "del _trusted_namespace",
        ])
        cell = nbformat.v4.new_code_cell(source)
        cell.id = run.bootstrap_id
        return cell


def _has_failure(outputs) -> bool:
    return any(o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr") for o in outputs)


def _identical(before: Any, after: Any) -> bool:
    """Exactly the same value: same types, dtypes, shapes and bytes."""
    try:
        return wire.encode(before) == wire.encode(after)
    except TypeError:  # `after` holds something the kernel could not encode
        return False


class VerifyTrustedChecks(NbGraderPreprocessor):
    """After execution: decide each trusted test cell's verdict here, from the raw results alone.

    The results bundle must appear exactly once in the cell, carry this run's token, parse
    strictly, and match the reference's results call by call (and leave the arguments unchanged
    when the check says so). The cell's outputs are then rewritten so that nbgrader's
    `determine_grade` can only give full points to a passing cell and zero to any other: the
    bundle is removed, an `execute_result` (which nbgrader reads as partial credit) becomes a plain
    `display_data`, and a failing cell gets an error output with a generic message. Errors and
    stderr output from the kernel still score zero, as they do in stock nbgrader. The test cell's
    source is put back exactly as the gradebook stores it, and the harness cell is removed.
    """

    def preprocess(self, nb, resources):
        run = resources.pop(RESOURCE, None)
        if run is None:
            return nb, resources
        nb.cells = [cell for cell in nb.cells if cell.get("id") != run.bootstrap_id]
        for cell in nb.cells:
            prepared = run.prepared.get(_grade_id(cell))
            if prepared is None or cell.cell_type != "code" or not utils.is_grade(cell):
                continue
            cell.source = prepared.source
            self._judge_cell(cell, prepared, run, _grade_id(cell))
        nb.metadata[RESOURCE] = {"format": wire.FORMAT, "seed": run.seed}
        return nb, resources

    def _judge_cell(self, cell, prepared: Prepared, run: Run, grade_id: str) -> None:
        bundles = [o for o in cell.outputs if isinstance(o.get("data"), dict) and wire.MIME in o["data"]]
        others = [o for o in cell.outputs if not any(o is b for b in bundles)]
        cell.outputs = others
        try:  # what stock nbgrader would have scored from the kernel's own outputs, for the record
            kernel_score, _ = utils.determine_grade(cell)
        except (ValueError, KeyError):
            kernel_score = None
        passed, message = self._verdict(prepared, bundles, run, grade_id, crashed=_has_failure(others))
        outputs = [nbformat.v4.new_output("display_data", data=o.data, metadata=o.get("metadata", {}))
                   if o.output_type == "execute_result" else o for o in others]
        if passed and _has_failure(others):
            message += " The cell also raised an error or wrote to stderr, which scores zero."
        if passed:
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=message + "\n"))
        else:
            outputs.append(nbformat.v4.new_output("error", ename=FAILURE, evalue=message,
                                                  traceback=[f"{FAILURE}: {message}"]))
        cell.outputs = outputs
        cell.metadata[RESOURCE] = {"passed": passed, "message": message, "kernel_score": kernel_score}
        self.log.info("%s: %s", grade_id, message)

    def _verdict(self, prepared: Prepared, bundles: list, run: Run, grade_id: str, *, crashed: bool):
        name = prepared.check.function
        if not bundles:
            if crashed:
                return False, f"The hidden tests of {name} did not run: the cell stopped with an error before them."
            return False, f"No hidden-test results of {name} reached the grader (the cell's output was suppressed)."
        if len(bundles) > 1:
            return False, f"The cell showed {len(bundles)} sets of hidden-test results for {name}; the grader's " \
                          "own appears exactly once."
        try:
            outcomes = wire.decode_results(bundles[0]["data"][wire.MIME], token=run.token, check=grade_id,
                                           n_args=prepared.n_args, n_rngs=[len(s) for s in prepared.rngs] or None)
        except wire.Malformed:
            return False, f"The hidden-test results of {name} were malformed or tampered with."
        n = len(outcomes)
        for i, (expected, outcome, sent) in enumerate(zip(prepared.expected, outcomes, prepared.sent, strict=True), 1):
            try:
                problem = prepared.check.compare(expected, outcome.result)
            except SpecError:
                raise
            except Exception as error:  # a custom comparison tripping over an odd result: the result's fault
                self.log.warning("%s: comparing hidden test %d failed: %r", grade_id, i, error)
                problem = "the result could not be compared with the reference"
            if problem is None and outcome.args is not None:
                pairs = zip(sent, outcome.args, strict=True)
                changed = [k for k, (before, after) in enumerate(pairs, 1) if not _identical(before, after)]
                if changed:
                    problem = f"it modified its argument {changed[0]}; it must leave its inputs unchanged"
            if problem is None and not isinstance(expected, wire.Raised) and not all(
                    _identical(want, got) for want, got in zip(prepared.rngs[i - 1], outcome.rngs, strict=True)):
                problem = ("it left the random generator it was given in another state than the reference does: "
                           "draw exactly what the exercise asks for from that generator, and nothing else")
            if problem is not None:
                return False, f"{name}: hidden test {i} of {n} failed: {problem}."
        if prepared.check.fixed_inputs:  # a quiz: the same call in every run, nothing fresh about it
            return True, f"Hidden tests passed: {name} matched the grader's reference."
        return True, f"Hidden tests passed: {name} matched the grader's reference on {n} fresh inputs."


def with_trusted_checks(pipeline: list) -> list:
    """An autograde pipeline with the trusted checks in place (unchanged if they already are).

    Inject goes right before `Execute`. Verify goes right before `SaveAutoGrades`: after
    `LimitOutput` and `IgnorePattern`, so that nothing between it and the saved grade can drop or
    reorder the outputs that carry its verdict.
    """
    names = [f"{__name__}.InjectTrustedChecks", f"{__name__}.VerifyTrustedChecks"]
    classes = [import_item(p) if isinstance(p, str) else p for p in pipeline]
    if InjectTrustedChecks in classes or VerifyTrustedChecks in classes:
        return list(pipeline)

    def position(kind: type) -> int:
        found = [i for i, c in enumerate(classes) if isinstance(c, type) and issubclass(c, kind)]
        if not found:
            raise ValueError(f"the autograde pipeline has no {kind.__name__}")
        return found[0]

    result = list(pipeline)
    result.insert(position(SaveAutoGrades), names[1])
    result.insert(position(Execute), names[0])
    return result
