"""Feedback step, last: the HTML page itself, safe to open for students and instructors.

`SafeFeedbackExporter` is nbgrader's feedback exporter (nbconvert's HTMLExporter with nbgrader's
`feedback` template) whose page carries no script at all and a strict Content-Security-Policy:
nothing on it runs, loads from elsewhere, or submits anything. Cell contents were already cleaned
by nbconvert's `SanitizeHTML` step (grader.pipeline.feedback_steps). Equations therefore show as
their TeX source: the page loads no MathJax, deliberately, so that it needs no remote script.
A page over `max_bytes` is replaced by a short one that says so and lists the scores.

A grading process writes many pages from the same lesson, so it does the same work once: the
templates are compiled once per process (a shared Jinja bytecode cache), and a code or markdown
cell that an earlier page already rendered (the release's own cells, mostly) is not highlighted
or rendered again. The images' alternative text and the cells' `tabindex`, which HTMLExporter adds
by parsing the whole page with BeautifulSoup (half of the page's cost), are added by `accessible`.
"""

from __future__ import annotations

import copy
import html
import re

from jinja2 import BytecodeCache, pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors.sanitize import SanitizeHTML
from traitlets import Integer

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
       "form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>", re.IGNORECASE | re.DOTALL)
# After SanitizeHTML, markdown links can still render as href="javascript:...", and no attribute of
# the page may run code: both are rewritten here, behind the CSP that would block them anyway.
# Found from the "=" (a literal the regex engine skips to), not from the attribute's name: started at
# every letter of a page's base64 images, the search took most of the page's hardening time.
SCRIPT_URL = re.compile(r"""=(\s*["']?)\s*(?:javascript|vbscript|data:text/html)""", re.IGNORECASE)
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href")
HANDLER = re.compile(r"""(<[^>]*?)\son[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
MAYBE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)  # in every match of HANDLER: a cheaper first look
ACTIVE_TAGS = re.compile(r"</?(?:iframe|object|embed|frame|frameset|base|form)\b[^>]*>", re.IGNORECASE)
# What nbconvert's HTMLExporter adds after rendering, as its BeautifulSoup pass does.
NO_ALT = re.compile(r"<img\b(?![^>]*\salt\s*=)", re.IGNORECASE)
ALT = 'alt="No description has been provided for this image"'
DIV = re.compile(r"<div\b[^>]*>")
FOCUSABLE = re.compile(r'\sclass="(?:[^"]*\s)?(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?:\s[^"]*)?"')
CACHED_SOURCE = 64 * 1024  # characters: a longer cell is rendered every time, not kept


class SafeFeedbackExporter(HTMLExporter):
    """HTMLExporter whose page has no script, a strict CSP `<meta>`, and a size cap."""

    max_bytes = Integer(8 * 1024**2, help="Largest feedback page written, in bytes.").tag(config=True)

    def from_notebook_node(self, nb, resources=None, **kw):
        # HTMLExporter.from_notebook_node without its BeautifulSoup pass: the same filters, then `accessible`.
        info = nb.metadata.get("language_info", {})
        lexer = info.get("pygments_lexer", info.get("name", None))
        self.register_filter("highlight_code", self.filters.get("highlight_code", _highlighter(lexer, self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                       parent=self, resources=resources))
        output, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        page = harden(accessible(output), max_bytes=self.max_bytes, scores=_scores(resources))
        return page, resources

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = _TEMPLATES
        return environment

    @pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        if cell.get("attachments") or len(source) > CACHED_SOURCE:
            return super().markdown2html(context, source)
        # The notebook's folder matters only to embedded images; it differs for every student.
        path = context.get("resources", {}).get("metadata", {}).get("path", "") if self.embed_images else ""
        return _markdown.get((source, path, self.embed_images, self.anchor_link_text, self.exclude_anchor_links),
                             lambda: super(SafeFeedbackExporter, self).markdown2html(context, source))


def prime(exporter: SafeFeedbackExporter, nb) -> None:
    """Render a page of `nb` (a lesson's release) into this process's caches, and discard it.

    The local supervisor forks one process per submission: what the caches hold at the fork, the
    compiled templates and the release's own cells, every submission's page then reuses.
    """
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)  # as an ungraded page: the caches do not depend on grades
    nb, _ = SanitizeHTML(parent=exporter).preprocess(nb, {})  # the cells as the feedback steps leave them
    exporter.from_notebook_node(nb, {"nbgrader": {"notebook": "", "score": 0, "max_score": 0, "late_penalty": 0}})


def accessible(page: str) -> str:
    """`page` with alternative text on every image and the cells focusable, as HTMLExporter makes them."""
    page = NO_ALT.sub(lambda m: f"{m.group(0)} {ALT}", page)
    return DIV.sub(lambda m: _focusable(m.group(0)), page)


def _focusable(div: str) -> str:
    if not FOCUSABLE.search(div) or re.search(r"\stabindex\s*=", div):
        return div
    return f'{div[:-1].rstrip("/")} tabindex="0">'



def harden(page: str, *, max_bytes: int = 0, scores: str = "") -> str:
    """`page` without scripts, with the CSP first in its head; a short notice if it is over `max_bytes`."""
    page = SCRIPT.sub("", page)
    page = SCRIPT_URL.sub(_without_script_url, page)
    while MAYBE_HANDLER.search(page) and HANDLER.search(page):
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


def _without_script_url(match: re.Match) -> str:
    """`match` (an "=" and a script URL after it) made harmless if the attribute before it is a URL's."""
    page, end = match.string, match.start()
    while end and page[end - 1].isspace():
        end -= 1
    if page[max(0, end - 10):end].lower().endswith(URL_ATTRIBUTES):
        return f"={match.group(1)}#removed-"
    return match.group(0)


def _scores(resources: dict) -> str:
    """The scores nbgrader's GetGrades step put in `resources`, as an HTML list."""
    grades = (resources or {}).get("nbgrader", {})
    if "score" not in grades:
        return ""
    return f"<p>Score: {html.escape(str(grades.get('score')))} / {html.escape(str(grades.get('max_score')))}</p>"


class _MemoryBytecodeCache(BytecodeCache):
    """Compiled templates, kept for this process (Jinja still checks each template's source)."""

    def __init__(self):
        self._compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket):
        if bucket.key in self._compiled:
            bucket.bytecode_from_string(self._compiled[bucket.key])

    def dump_bytecode(self, bucket):
        self._compiled[bucket.key] = bucket.bytecode_to_string()


class _Rendered:
    """Rendered cells by source and settings, up to `budget` characters; the oldest go first."""

    def __init__(self, budget: int = 16 * 1024**2):
        self._items: dict[tuple, str] = {}
        self._budget, self._used = budget, 0

    def get(self, key: tuple, render) -> str:
        if key in self._items:
            return self._items[key]
        rendered = self._items[key] = render()
        self._used += len(key[0]) + len(rendered)
        while self._used > self._budget and self._items:  # may drop this one too, if it alone is over
            old = next(iter(self._items))
            self._used -= len(old[0]) + len(self._items.pop(old))
        return rendered


_TEMPLATES = _MemoryBytecodeCache()
_markdown, _code = _Rendered(), _Rendered()


def _highlighter(lexer: str | None, exporter: HTMLExporter):
    """nbconvert's Highlight2HTML for `lexer`, remembering the cells it has highlighted in this process."""
    highlight = Highlight2HTML(pygments_lexer=lexer, parent=exporter)
    options = repr(sorted(highlight.extra_formatter_options.items()))

    def highlight_code(source, language=None, metadata=None):
        if len(source) > CACHED_SOURCE:
            return highlight(source, language, metadata)
        magics = (metadata or {}).get("magics_language")
        return _code.get((source, language, repr(magics), highlight.pygments_lexer, options),
                         lambda: highlight(source, language, metadata))

    return highlight_code
