"""Autograde step, right before the grades are saved: decide each trusted test cell's verdict here."""

from __future__ import annotations

from typing import Any

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from grader import cell_roles
from grader.trusted import wire
from grader.trusted.prepared_checks import FAILURE, RESOURCE, Prepared, Run
from grader.trusted.spec import SpecError


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
            prepared = run.prepared.get(cell_roles.grade_id(cell))
            if prepared is None or cell.cell_type != "code" or not utils.is_grade(cell):
                continue
            cell.source = prepared.source
            self._judge_cell(cell, prepared, run, cell_roles.grade_id(cell))
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
                problem = _argument_problem(prepared, i - 1, sent, outcome.args)
            if problem is None and not isinstance(expected, wire.Raised) and not all(
                    _identical(want, got) for want, got in zip(prepared.rngs[i - 1], outcome.rngs, strict=True)):
                problem = ("it left the random generator it was given in another state than the reference does: "
                           "draw exactly what the exercise asks for from that generator, and nothing else")
            if problem is not None:
                return False, f"{name}: hidden test {i} of {n} failed: {problem}."
        if prepared.check.fixed_inputs:  # a quiz: the same call in every run, nothing fresh about it
            return True, f"Hidden tests passed: {name} matched the grader's reference."
        return True, f"Hidden tests passed: {name} matched the grader's reference on {n} fresh inputs."


def _argument_problem(prepared: Prepared, call: int, sent: tuple, digests: list[str]) -> str | None:
    """What is wrong with the arguments after one call: a written argument not as the reference left its
    copy (Check.written_args), or, with unchanged_args, any other argument changed; None when all is right."""
    check = prepared.check
    written = prepared.written[call] if prepared.written else sent
    for k, (before, after, digest) in enumerate(zip(sent, written, digests, strict=True)):
        if k in check.written_args:
            if wire.digest(wire.encode(after)) != digest:
                return (f"its argument {k + 1} does not hold what the exercise asks it to write there in place "
                        "(a function that writes into a copy leaves the caller's array as it was)")
        elif check.unchanged_args and wire.digest(wire.encode(before)) != digest:
            return f"it modified its argument {k + 1}; it must leave its inputs unchanged"
    return None
