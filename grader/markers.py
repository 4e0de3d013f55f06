"""The region markers of a lesson's source cells, as nbgrader's own settings define them.

nbgrader's `ClearSolutions` and `ClearHiddenTests` preprocessors own the markers (`### BEGIN
SOLUTION`, `### BEGIN HIDDEN TESTS` and their ends); the course reads them from there, with the
course's configuration, instead of spelling them out again.
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions
from traitlets.config import Config


def hidden_tests(config: Config | None = None) -> tuple[str, str]:
    """The (begin, end) markers of a hidden-test block."""
    step = ClearHiddenTests(config=config or Config())
    return step.begin_test_delimeter, step.end_test_delimeter


def solution(config: Config | None = None) -> tuple[str, str]:
    """The (begin, end) markers of a solution region."""
    step = ClearSolutions(config=config or Config())
    return step.begin_solution_delimeter, step.end_solution_delimeter


def any_marker(config: Config | None = None) -> re.Pattern[str]:
    """A pattern that finds any of the markers (and nbgrader's mark-scheme ones) in released text."""
    names = [*solution(config), *hidden_tests(config), "BEGIN MARK SCHEME", "END MARK SCHEME"]
    return re.compile("|".join(re.escape(name) for name in names))
