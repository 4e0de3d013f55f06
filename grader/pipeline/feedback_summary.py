"""The grade summary at the top of a feedback page, (re)written after grading without running a kernel.

nbgrader writes a feedback page once, when the submission is graded; the student's name as the
roster gives it, the lateness, the penalty and the final points come from facts that may change
afterwards (a roster, a deadline, an extension). So the feedback template
(grader/pipeline/feedback_template) makes the first element of the page's body a slot,
`<section id="course-summary">`, holding nbgrader's total until `write_summary` fills it with a
`FeedbackSummary`; writing it again replaces it, so the page always shows the latest facts.

Where the slot is: the first `<section id="course-summary">` of the page, looked for only before the
template's `<div id="notebook">`, which holds every cell of the notebook. Nothing a student
controls comes before that point, and the sanitiser lets no `<section>` of theirs through anyway,
so a submission can neither plant a slot nor move the summary. The summary is rendered by an
autoescaping Jinja2 template, so no value in it can close the section early: the next
`</section>` after the slot is always its own end. The page's head (its Content-Security-Policy
above all) is left as it is.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2

from grader.errors import CourseError
from grader.safe_text import for_terminal
from grader.student.points import number

SLOT = '<section id="course-summary">'  # exactly as the feedback template writes it
SLOT_END = "</section>"
NOTEBOOK = '<div id="notebook">'  # the template's container of every cell: the slot comes before it
BODY = re.compile(r"<body\b[^>]*>", re.IGNORECASE)

_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string("""
    <h1>{{ s.lesson }} (Score: {{ number(s.final) }} / {{ number(s.max_points) }})</h1>
    <dl class="grade">
      <dt>Student</dt><dd><bdi>{{ s.student_name }}</bdi> ({{ s.student_id }})</dd>
      <dt>Points</dt><dd>{{ number(s.points) }} / {{ number(s.max_points) }}</dd>
      <dt>Handed in</dt><dd>{{ s.lateness }}</dd>
      <dt>Late penalty</dt><dd{% if s.penalty %} class="late-penalty"{% endif %}>
        {%- if s.penalty %}-{{ number(s.penalty) }}{% else %}none{% endif %}</dd>
      <dt>Final</dt><dd><strong>{{ number(s.final) }} / {{ number(s.max_points) }}</strong></dd>
    </dl>
    """)


class NotAFeedbackPage(CourseError):
    """A file that is not a feedback page of the course (no body to put a summary in)."""


@dataclass(frozen=True)
class FeedbackSummary:
    """What the top of one student's feedback page says about their grade.

    `points` are before the penalty, `final` after it; `lateness` is a phrase such as "on time",
    "late 1 d 2 h" or "marked late by the LMS" (grader.grading.policy.late.Lateness.status, the one place
    that decides and words lateness).
    """

    student_name: str
    student_id: str
    lesson: str
    points: float
    max_points: float
    lateness: str
    penalty: float
    final: float

    def __post_init__(self):
        for name in ("points", "max_points", "penalty", "final"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"FeedbackSummary.{name} must be a finite number, not {value!r}")
        for name in ("student_name", "student_id", "lesson", "lateness"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"FeedbackSummary.{name} must be text, not {getattr(self, name)!r}")


def render_summary(summary: FeedbackSummary) -> str:
    """The inside of the page's summary section: every text of `summary` made inert, then escaped."""
    shown = FeedbackSummary(**{name: for_terminal(value) if isinstance(value, str) else value
                               for name, value in vars(summary).items()})
    return _TEMPLATE.render(s=shown, number=number)


def filled(page: str, summary: FeedbackSummary) -> str:
    """`page` with its summary section holding `summary`, whatever it held before.

    A page without the section (one written before the template had it, or the short notice that
    replaces an oversized page) gets one right after its `<body>` tag, before all of its content.
    """
    boundary = page.find(NOTEBOOK)
    start = page.find(SLOT, 0, boundary if boundary >= 0 else len(page))
    section = SLOT + render_summary(summary) + SLOT_END
    if start >= 0:
        end = page.find(SLOT_END, start + len(SLOT))
        if end < 0 or (0 <= boundary < end):
            raise NotAFeedbackPage("its summary section is not closed before the notebook's cells: "
                                   "generate the feedback again")
        return page[:start] + section + page[end + len(SLOT_END):]
    body = BODY.search(page, 0, boundary if boundary >= 0 else len(page))
    if body is None:
        raise NotAFeedbackPage("it has no <body>: generate the feedback again")
    return page[:body.end()] + section + page[body.end():]


def write_summary(page: Path, summary: FeedbackSummary) -> None:
    """Fill the summary section of the feedback page at `page` with `summary`, replacing any earlier one.

    The page is replaced in one step (a new file renamed over it), so a reader never sees half a
    page. Raises NotAFeedbackPage for a file that is not a feedback page of the course.
    """
    page = Path(page)
    text = page.read_text(encoding="utf-8", errors="surrogateescape")
    try:
        new = filled(text, summary)
    except NotAFeedbackPage as error:
        raise NotAFeedbackPage(f"{page} is not a feedback page the course can add a summary to: {error}") from None
    fd, temporary = tempfile.mkstemp(prefix=".summary-", suffix=".html", dir=page.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as out:
            out.write(new)
        os.chmod(temporary, page.stat().st_mode & 0o777)
        os.replace(temporary, page)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
