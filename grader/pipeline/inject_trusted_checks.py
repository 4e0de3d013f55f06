"""Autograde step, right before execution: choose this run's hidden-test inputs and install the harness."""

from __future__ import annotations

import json
import secrets

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from grader import cell_roles, markers
from grader.trusted import wire
from grader.trusted.prepared_checks import HARNESS, RESOURCE, Prepared, Run
from grader.trusted.spec import Case, SpecError, load_spec, seeded


def _with_call(source: str, call_line: str, config=None) -> str:
    """The source with its hidden-test block replaced by `call_line` (appended if it has none)."""
    lines = source.splitlines()
    opening, closing = markers.hidden_tests(config)
    begin = next((i for i, line in enumerate(lines) if opening in line), None)
    end = next((i for i, line in enumerate(lines) if closing in line and i > (begin or 0)), None)
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
            grade_id = cell_roles.grade_id(cell)
            if cell.cell_type != "code" or not utils.is_grade(cell) or grade_id not in spec.checks:
                continue
            if grade_id in run.prepared:
                raise SpecError(f"two test cells have grade_id {grade_id}")
            check = spec.checks[grade_id]
            cases = list(check.cases(seeded(seed, grade_id)))
            if not cases or not all(isinstance(case, Case) for case in cases):
                raise SpecError(f"{grade_id}: cases(rng) must yield call(...) objects")
            payload = wire.encode_calls(((case.args, case.kwargs) for case in cases), check.keeps_args)
            if check.replace_globals:  # trusted definitions the kernel swaps in during the calls
                payload["globals"] = check.kernel_globals()
            if check.tensors:  # the kernel passes the arrays as torch tensors and sends tensors back as arrays
                payload["tensors"] = True
            if check.strict_floats:  # the kernel calls the function with NumPy's floating-point warnings as errors
                payload["strict_floats"] = True

            def received(payload=payload):  # a fresh copy of every call's arguments, as the kernel decodes them
                return [(tuple(wire.decode(a) for a in call["args"]), {k: wire.decode(v) for k, v in call["kwargs"]})
                        for call in payload["cases"]]

            after = received()  # the reference's copies: what it writes into them is what written_args must hold
            outcomes = [check.outcome(Case(args, kwargs, case.expect_raise))
                        for (args, kwargs), case in zip(after, cases, strict=True)]
            expected = [result for result, _ in outcomes]
            sent = [args for args, _ in received()]
            run.prepared[grade_id] = Prepared(
                check=check, source=cell.source, expected=expected, sent=sent,
                n_args=[len(args) if check.keeps_args else None for args in sent],
                rngs=[states for _, states in outcomes], written=[args for args, _ in after])
            text = json.dumps(payload, separators=(",", ":"))
            cell.source = _with_call(cell.source, f"{run.entry}({grade_id!r}, {check.function}, {text!r})",
                                     self.config)
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
