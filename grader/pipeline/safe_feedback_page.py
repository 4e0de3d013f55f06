"""Feedback step, last: the HTML page itself, safe to open for students and instructors.

`SafeFeedbackExporter` is nbgrader's feedback exporter (nbconvert's HTMLExporter with nbgrader's
`feedback` template) whose page carries no script at all and a strict Content-Security-Policy:
nothing on it runs, loads from elsewhere, or submits anything. Cell contents were already cleaned
by nbconvert's `SanitizeHTML` step (grader.pipeline.feedback_steps). Equations therefore show as
their TeX source: the page loads no MathJax, deliberately, so that it needs no remote script.
A page over `max_bytes` is replaced by a short one that says so and lists the scores.
"""

from __future__ import annotations

import html
import re

from nbconvert.exporters import HTMLExporter
from traitlets import Integer

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
       "form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>", re.IGNORECASE | re.DOTALL)
# After SanitizeHTML, markdown links can still render as href="javascript:...", and no attribute of
# the page may run code: both are rewritten here, behind the CSP that would block them anyway.
SCRIPT_URL = re.compile(r"""((?:href|src|action|formaction|xlink:href)\s*=\s*["']?)\s*"""
                        r"(?:javascript|vbscript|data:text/html)", re.IGNORECASE)
HANDLER = re.compile(r"""(<[^>]*?)\son[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
ACTIVE_TAGS = re.compile(r"</?(?:iframe|object|embed|frame|frameset|base|form)\b[^>]*>", re.IGNORECASE)


class SafeFeedbackExporter(HTMLExporter):
    """HTMLExporter whose page has no script, a strict CSP `<meta>`, and a size cap."""

    max_bytes = Integer(8 * 1024**2, help="Largest feedback page written, in bytes.").tag(config=True)

    def from_notebook_node(self, nb, resources=None, **kw):
        output, resources = super().from_notebook_node(nb, resources, **kw)
        return harden(output, max_bytes=self.max_bytes, scores=_scores(resources)), resources


def harden(page: str, *, max_bytes: int = 0, scores: str = "") -> str:
    """`page` without scripts, with the CSP first in its head; a short notice if it is over `max_bytes`."""
    page = SCRIPT.sub("", page)
    page = SCRIPT_URL.sub(r"\1#removed-", page)
    while HANDLER.search(page):
        page = HANDLER.sub(r"\1", page)
    page = ACTIVE_TAGS.sub("", page)
    if re.search(r"<script\b", page, re.IGNORECASE):  # an unterminated one: keep nothing after it
        page = page[: re.search(r"<script\b", page, re.IGNORECASE).start()]
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    page = re.sub(r"<head[^>]*>", lambda m: m.group(0) + meta, page, count=1, flags=re.IGNORECASE)
    if meta not in page:
        page = meta + page
    if max_bytes and len(page.encode()) > max_bytes:
        page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'>{meta}<title>Feedback</title></head><body>"
                f"<p>This feedback page was over {max_bytes} bytes and was not kept: the notebook's outputs are "
                f"too large. Ask your instructor for the graded notebook.</p>{scores}</body></html>")
    return page


def _scores(resources: dict) -> str:
    """The scores nbgrader's GetGrades step put in `resources`, as an HTML list."""
    grades = (resources or {}).get("nbgrader", {})
    if "score" not in grades:
        return ""
    return f"<p>Score: {html.escape(str(grades.get('score')))} / {html.escape(str(grades.get('max_score')))}</p>"
