"""Feedback step, last: the HTML page itself, safe to open for students and instructors, and offline.

`SafeFeedbackExporter` is nbconvert's HTMLExporter with the course's feedback template
(grader/pipeline/feedback_template: nbgrader's feedback page with a small stylesheet of its own, no
script, wrapped messages, and the links at the top named by exercise). Everything a student
controls was reduced and sanitised by `grader.pipeline.clean_feedback` (an allowlist, nh3) before
the page is built, and each markdown cell is sanitised the same way as it is rendered here, its
equations turned into MathML. The page carries a strict Content-Security-Policy as a second wall:
no script, no request, no form, even if some markup got through. A page over `max_bytes` is
replaced by a short one that says so and lists the scores.

The images' alternative text and the cells' `tabindex`, which HTMLExporter adds by parsing the
whole page with BeautifulSoup, are added by `accessible` without it; code is highlighted with
Pygments' spans for keywords, strings and comments only.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from traitlets import Integer, Unicode, default, validate

from grader.page_policy import META
from grader.pipeline.clean_feedback import clean_html, math

TEMPLATE = "course_feedback"
TEMPLATES = str(Path(__file__).resolve().parent / "feedback_template")
# What nbconvert's HTMLExporter adds after rendering, as its BeautifulSoup pass does.
NO_ALT = re.compile(r"<img\b(?![^>]*\salt\s*=)", re.IGNORECASE)
ALT = 'alt="No description has been provided for this image"'
DIV = re.compile(r"<div\b[^>]*>")
FOCUSABLE = re.compile(r'\sclass="(?:[^"]*\s)?(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?:\s[^"]*)?"')
# Pygments' spans for names, punctuation, operators, whitespace and numbers: most of a page's bytes, and
# dropped; the page's own stylesheet colours keywords, strings and comments only.
PLAIN_TOKENS = re.compile(r'<span class="(?:n|p|o|w|mi|mf)">([^<]*)</span>')


class _MathRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, writing equations as MathML instead of TeX for a script to draw."""

    def block_math(self, body: str) -> str:
        return math(body, display=True)

    def inline_math(self, body: str) -> str:
        return math(body, display=False)

    def latex_environment(self, name: str, body: str) -> str:
        return math(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


class SafeFeedbackExporter(HTMLExporter):
    """HTMLExporter with the course's feedback template, cleaned markdown, a strict CSP `<meta>`, a size cap."""

    max_bytes = Integer(8 * 1024**2, help="Largest feedback page written, in bytes.").tag(config=True)

    # Not configurable: whatever nbgrader configures (its own "feedback"), the page's safety depends on it.
    template_name = Unicode(TEMPLATE, help="The course's feedback template (not configurable).")

    @default("extra_template_basedirs")
    def _course_templates_then_cwd(self):  # nbconvert's own default is the working folder alone
        return [TEMPLATES, os.getcwd()]

    @validate("extra_template_basedirs")
    def _course_templates_first(self, proposal):  # folders configured (nbgrader's too) come after the course's
        return [TEMPLATES, *(path for path in proposal["value"] if path != TEMPLATES)]

    def from_notebook_node(self, nb, resources=None, **kw):
        """The page: TemplateExporter's rendering with the lean highlighter, then `accessible`
        (HTMLExporter's own BeautifulSoup pass, skipped) and `harden`."""
        info = nb.metadata.get("language_info", {})
        lexer = info.get("pygments_lexer", info.get("name", None))
        self.register_filter("highlight_code", self.filters.get("highlight_code", _highlighter(lexer, self)))
        resources = dict(resources or {})
        resources["nbgrader_exercises"] = exercises(nb)
        resources.setdefault("nbgrader", {"notebook": "", "score": 0, "max_score": 0, "late_penalty": 0})
        output, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        page = harden(accessible(output), max_bytes=self.max_bytes, scores=_scores(resources))
        return page, resources

    @pass_context
    def markdown2html(self, context, source):
        """HTMLExporter.markdown2html with equations as MathML, then sanitised."""
        cell = context.get("cell", {})
        renderer = _MathRenderer(escape=False, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
                                 path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                                 anchor_link_text=self.anchor_link_text,
                                 exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
        return clean_html(MarkdownWithMath(renderer=renderer).render(source))


def exercises(nb) -> dict[str, str]:
    """grade_id -> "Exercise k: <answer cell>" for every answer and test cell, a test named by the answer before it."""
    names, current, count = {}, None, 0
    for cell in nb.cells:
        info = cell.metadata.get("nbgrader") or {}
        grade_id = str(info.get("grade_id", ""))
        if info.get("solution"):
            count += 1
            current = names[grade_id] = f"Exercise {count}: {grade_id}"
        elif info.get("grade"):
            names[grade_id] = current or grade_id
    return names


def accessible(page: str) -> str:
    """`page` with alternative text on every image and the cells focusable, as HTMLExporter makes them."""
    page = NO_ALT.sub(lambda m: f"{m.group(0)} {ALT}", page)
    return DIV.sub(lambda m: _focusable(m.group(0)), page)


def _focusable(div: str) -> str:
    if not FOCUSABLE.search(div) or re.search(r"\stabindex\s*=", div):
        return div
    return f'{div[:-1].rstrip("/")} tabindex="0">'


def harden(page: str, *, max_bytes: int = 0, scores: str = "") -> str:
    """`page` with the CSP first in its head; a short notice instead if it is over `max_bytes`.

    The page's content was sanitised before (`grader.pipeline.clean_feedback`); the policy is the
    second wall: were any script, request or form left, the browser would refuse it.
    """
    meta = META
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


def _highlighter(lexer: str | None, exporter: HTMLExporter):
    """nbconvert's Highlight2HTML for `lexer`, without the spans of PLAIN_TOKENS."""
    highlight = Highlight2HTML(pygments_lexer=lexer, parent=exporter)

    def highlight_code(source, language=None, metadata=None):
        return PLAIN_TOKENS.sub(r"\1", highlight(source, language, metadata))

    return highlight_code
