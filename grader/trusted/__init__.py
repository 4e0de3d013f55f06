"""Hidden tests whose verdict is decided in the grading process, not in the student's kernel.

Stock nbgrader runs hidden tests in the student's kernel, after the student's code, so the student
controls the judge: `np.allclose = lambda *a, **k: True` in a submission scores full marks, and so
does a last expression that evaluates to a number (nbgrader reads it as partial credit). Here the
kernel only *evaluates*; it never judges.

How a graded test cell is checked, in nbgrader's autograde pipeline:

1. Sanitising (stock nbgrader): ClearOutput, then OverwriteCells restores every locked test cell
   from the gradebook, hidden-test block included, and puts back deleted ones.
2. `InjectTrustedChecks` (just before Execute, in the grading process) loads the lesson's trusted
   spec (`grader/trusted/specs/<lesson>.py`), draws fresh inputs for each graded cell from a seed
   made for this notebook and this run (`secrets`), computes the expected results with the
   trusted reference implementation, and replaces the cell's hidden-test block with one call:
   evaluate the student's function on these inputs and display what came back. The inputs travel
   in the cell source, so no student code can see them before that cell runs. A first cell is
   added that installs the kernel-side harness (`harness.py`) before any student code runs.
3. Execute (stock): the visible checks run as the student saw them, then the harness calls the
   student's function and displays the results once, as strictly encoded data (`wire.py`:
   allowlisted dtypes, shapes and raw bytes in JSON; nothing that is executed or unpickled),
   under a MIME type of its own, with this run's random token.
4. `VerifyTrustedChecks` (after IgnorePattern and LimitOutput, just before SaveAutoGrades) finds
   exactly one results bundle in each graded cell, parses it strictly, compares it with the
   expected results (`spec.Same`, with tolerance), and rewrites the cell's outputs so that stock
   SaveAutoGrades can only score it full on a pass and zero otherwise: the bundle is removed, an
   `execute_result` becomes plain `display_data` (no partial credit), and a failure, a missing or
   duplicated or malformed bundle gets an error output with a generic message. The cell's source
   is restored byte for byte and the harness cell removed, so the autograded notebook matches the
   gradebook (checksums, feedback, `ClearHiddenTests` all see what they expect).

Why this holds: to score, a cell's one results bundle must equal values computed outside the
kernel from inputs drawn after the student's code was written. Whatever the kernel prints,
displays, patches or raises can only add failures. Modifying a test cell's source before
execution does not touch nbgrader's checksum handling: OverwriteCells compares checksums during
sanitising, before the injection, and the autograde phase never compares a grade cell's checksum.

What this does not protect against (see README, "What the grader trusts"): the kernel runs as
the grading user with that user's file system and network. Code in a submission can read the
trusted specs and the gradebook, write to the gradebook, or signal the grading process. Run
autograding in a sandbox (a container or VM with no network and no secrets, where the kernel
cannot write the gradebook), never on a machine that holds anything else of value.

Modules: `spec` (what a lesson author writes: `Check`, `call`, `Same`, `HIDDEN_BLOCK`),
`wire` (the strict format), `harness` (kernel side), `preprocessors` (the two nbgrader steps and
`with_trusted_checks`, which puts them in a pipeline), `specs/` (one trusted spec per lesson).
"""

from grader.trusted.spec import HIDDEN_BLOCK, Case, Check, Same, SpecError, call, load_spec, spec_lessons
from grader.trusted.wire import Rng

__all__ = ["HIDDEN_BLOCK", "Case", "Check", "Rng", "Same", "SpecError", "call", "load_spec", "spec_lessons"]
