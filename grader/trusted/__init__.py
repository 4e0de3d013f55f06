"""Hidden tests whose verdict is decided in the grading process, never in the student's kernel.

`spec` is what a lesson author writes (`Check`, `call`, `Same`, HIDDEN_BLOCK; docs/lesson-style.md),
`wire` the strict data format results cross the kernel boundary in, `harness` the kernel side,
`prepared_checks` what the grading process keeps during one run; each lesson's spec is
`solutions/<id>.checks.py`. The two nbgrader steps are grader.pipeline.inject_trusted_checks and
verify_trusted_checks; docs/trust.md says what this does and does not protect against.
"""

from grader.trusted.spec import HIDDEN_BLOCK, Case, Check, Same, SpecError, call, load_spec, spec_lessons
from grader.trusted.wire import Rng

__all__ = ["HIDDEN_BLOCK", "Case", "Check", "Rng", "Same", "SpecError", "call", "load_spec", "spec_lessons"]
