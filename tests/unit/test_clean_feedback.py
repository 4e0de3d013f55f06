"""The feedback page of a hostile notebook: every attack of issue 27 item 1, through the feedback steps and the page.

Each attack is put where a student can put it (a markdown cell, a raw cell, an output of any MIME
type, an output's metadata, a cell's metadata), the notebook goes through `CleanFeedbackCells` and
`SafeFeedbackExporter` as `generate_feedback` runs them, and the page is parsed: what it holds must
be the template's own markup plus allowlisted tags, with no request, navigation, style or form.
"""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from grader.page_policy import CSP
from grader.pipeline.clean_feedback import CleanFeedbackCells, clean_html, reencoded
from grader.pipeline.safe_feedback_page import SafeFeedbackExporter

REMOTE = "http://127.0.0.1:9/"
ATTACKS = [
    f'<meta http-equiv="refresh" content="0;url={REMOTE}refresh">',
    f"<style>@import url('{REMOTE}import.css'); body {{ display: none }}</style>",
    '<div style="position:fixed;top:0;left:0;width:100%;height:100%;background:#fff">Score: 15 / 15</div>',
    f'<link rel="stylesheet" href="{REMOTE}link.css">',
    f'<form action="{REMOTE}form"><button formaction="{REMOTE}formaction">go</button></form>',
    f'<img src="{REMOTE}img.png"><video poster="{REMOTE}poster.png"></video><audio src="{REMOTE}a.mp3"></audio>',
    f'<svg><image href="{REMOTE}svg.png"/></svg><object data="{REMOTE}o"></object><embed src="{REMOTE}e">',
    '<a href="&#106;avascript:alert(1)">entity</a><a href=" javascript:alert(2)">space</a>',
    '<a href="data:application/xhtml+xml;base64,PGh0bWw+PC9odG1sPg==">data document</a>',
    f'<iframe src="{REMOTE}frame"></iframe><base href="{REMOTE}"><script>alert(3)</script>',
    '<img src=x onerror="alert(4)"><p onclick="alert(5)">handler</p>',
    f'<math><mi href="{REMOTE}mathml">x</mi></math><table background="{REMOTE}bg.png"><tr><td>t</td></tr></table>',
]


def _png(width: int = 2, height: int = 2) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def hostile_notebook() -> nbformat.NotebookNode:
    attacks = "\n".join(ATTACKS)
    sizes = {"image/png": {"width": "100 srcset=http://127.0.0.1:9/srcset style=position:fixed", "height": 5}}
    outputs = [
        new_output("display_data", data={"text/html": attacks, "text/plain": "html"}),
        new_output("display_data", data={"text/markdown": attacks}),
        new_output("display_data", data={"image/svg+xml": f'<svg><image href="{REMOTE}svg-output.png"/></svg>'}),
        new_output("display_data", data={"application/javascript": "alert(6)", "text/plain": "js"}),
        new_output("display_data", data={"text/latex": r"$\href{javascript:alert(7)}{x}$"}),
        new_output("display_data", data={"image/png": _png()}, metadata=sizes),
        new_output("display_data", data={"image/png": "not base64 <script>alert(8)</script>"}),
        new_output("execute_result", data={"text/html": attacks}, metadata={"text/html": {"isolated": True}},
                   execution_count=1),
    ]
    answer = new_code_cell("def f():\n    return 1", outputs=outputs,
                           metadata={"tags": ['x" onmouseover="alert(9)'], "nbgrader": {
                               "grade_id": "f", "solution": True, "grade": False, "locked": False}})
    test = new_code_cell("assert f() == 1", metadata={"nbgrader": {
        "grade_id": "test_f", "solution": False, "grade": True, "locked": True, "points": 2, "score": 2}})
    raw = new_raw_cell(attacks, metadata={"raw_mimetype": "text/html"})
    markdown = new_markdown_cell(attacks + "\n\nThe scores $QK^\\top / \\sqrt{d}$ and\n\n$$A = \\frac{1}{2}$$")
    markdown.attachments = {"x.svg": {"image/svg+xml": base64.b64encode(b"<svg/>").decode()}}
    nb = new_notebook(cells=[markdown, raw, answer, test], metadata={
        "title": "</title><script>alert(10)</script>", "widgets": {"state": "<script>alert(11)</script>"},
        "language_info": {"name": "html", "pygments_lexer": "html"}})
    for number, cell in enumerate(nb.cells):
        cell.id = f"cell-{number}"
    return nb


def page_of(nb) -> str:
    resources = {"nbgrader": {"notebook": "lesson", "score": 2, "max_score": 2, "late_penalty": 0}}
    nb, resources = CleanFeedbackCells().preprocess(nb, resources)
    page, _ = SafeFeedbackExporter().from_notebook_node(nb, resources)
    return page


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.head = True

    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.head = False
        self.tags.append((tag, dict(attrs), self.head))


def test_no_attack_of_a_hostile_notebook_is_left_on_its_feedback_page():
    page = page_of(hostile_notebook())
    parser = Tags()
    parser.feed(page)
    tags = parser.tags
    assert not {tag for tag, _, _ in tags} & {"script", "iframe", "object", "embed", "form", "button", "link", "base",
                                              "video", "audio", "svg", "image", "frame", "input"}
    metas = [attrs for tag, attrs, _ in tags if tag == "meta"]
    assert {attrs.get("http-equiv") for attrs in metas} == {None, "Content-Security-Policy"}
    assert [attrs["content"] for attrs in metas if attrs.get("http-equiv")] == [CSP]
    assert all(in_head for tag, _, in_head in tags if tag == "style"), "a style element in the body"
    for tag, attrs, _ in tags:
        assert "style" not in attrs and "srcset" not in attrs and "background" not in attrs, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("src", "href", "poster", "action", "formaction", "data"):
            value = (attrs.get(name) or "").strip()
            if name == "src" and name in attrs:
                assert value.startswith("data:image/png;base64,"), (tag, attrs)
            elif value:
                assert value.startswith(("#", "https://", "http://")) and tag == "a", (tag, attrs)
                assert "127.0.0.1" not in value or tag == "a", (tag, attrs)
        if tag == "img":
            assert set(attrs) <= {"src", "alt", "width", "height"} and attrs.get("width") in (None, "5", "100")
    lowered = page.lower()
    assert "alert(" not in page.split("<body>")[0]
    assert "data:application" not in lowered and "<math" in page  # equations drawn as MathML, no script


def test_no_class_or_id_of_a_student_can_be_one_of_the_pages_own():
    """A student's classes and ids are prefixed, their links to anchors too: none takes the grader's style or anchor."""
    fake = ('<div class="nbgrader_cell"><div class="panel-heading" id="test_scores">Tests of Exercise 1</div>'
            '<span class="pull-right" name="top">Score: 3.0 / 3.0</span><a href="#top">(Top)</a></div>')
    assert clean_html(fake) == ('<div class="student-nbgrader_cell"><div class="student-panel-heading" '
                                'id="student-test_scores">Tests of Exercise 1</div><span class="student-pull-right">'
                                'Score: 3.0 / 3.0</span><a href="#student-top" rel="noopener noreferrer nofollow">'
                                '(Top)</a></div>')


def test_links_in_a_page_go_only_to_anchors_and_web_pages():
    assert clean_html('<a href="#x">a</a>') == '<a href="#student-x" rel="noopener noreferrer nofollow">a</a>'
    for href in ("javascript:alert(1)", "&#106;avascript:alert(1)", "data:text/html,x", "file:///etc/passwd",
                 "vbscript:x", "data:application/xhtml+xml;base64,PGh0bWw+"):
        assert "href" not in clean_html(f'<a href="{href}">a</a>'), href


@pytest.mark.parametrize("data", ["", "not base64!", base64.b64encode(b"GIF89a...").decode(), _png(3000, 3000)])
def test_an_image_that_is_not_a_small_png_or_jpeg_is_not_shown(data):
    assert reencoded(data, "image/png") is None


def test_a_png_is_shown_as_a_png_again():
    again = reencoded(_png(4, 3), "image/png")
    assert base64.b64decode(again).startswith(b"\x89PNG")
