"""The feedback pages of a hostile batch, opened in a real browser: nothing loads, nothing navigates.

The submissions of tests/fixtures/hostile/output-and-pages.toml (meta refresh, styles, overlays,
forms, remote images, script links, in markdown, raw cells and every kind of output) are graded
next to an honest one with `python -m grader autograde`, their URLs pointing at a listener on the
loopback. Headless Chromium (Debian's `chromium`, driven by Playwright) then opens every page from
disk and the test asserts what an instructor or a student needs: the browser made no request but
the page itself, the page never navigated, the listener heard nothing, no element covers the page,
the score at the top is the grader's (the CSV's), and the equations are drawn (MathML, no script).
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import nbformat
import pytest

from grader.extras import EXTRAS
from grader.student.submission_names import submission_filename
from tests.support import build_notebook, hostile_cases, make_course

LESSON = "03-parallel-heads"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
SETTLE_MS = 1500  # a refresh of 0 s, an image or a stylesheet would have been asked for by then


class _Heard(BaseHTTPRequestHandler):
    heard: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.heard.append(self.path)
        self.send_response(204)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def listener():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Heard)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Heard.heard
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def batch(tmp_path_factory, listener):
    root = tmp_path_factory.mktemp("pages")
    course = make_course(root / "course", lessons=[LESSON])
    cases = {"honest": {}, **hostile_cases({"listener": listener[0]}, files="output-and-pages.toml")}
    cases = {name: spec for name, spec in cases.items() if spec.get("status", "graded") == "graded"}
    archive = root / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name, spec in cases.items():
            nb = build_notebook(LESSON, course.release(LESSON), spec)
            handle.writestr(submission_filename(LESSON, name, "20260115-100000"),
                            nbformat.writes(nb, ensure_ascii=True))
    run = subprocess.run([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(course.root),
                          "--source", str(archive), "--workers", "2"], capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    with course.layout.grades_csv(LESSON).open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    return course, cases, rows


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api  # the test is skipped where the extra is missing (tests/plugins/extras.py)

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=EXTRAS["chromium"].executable(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.mark.needs("playwright", "chromium")
def test_hostile_feedback_pages_load_nothing_navigate_nowhere_and_show_the_graders_score(batch, browser, listener):
    course, cases, rows = batch
    problems = []
    for name in cases:
        path = course.layout.feedback_page(name, LESSON)
        assert path.is_file(), f"{name}: no feedback page"
        url = path.resolve().as_uri()
        requests, navigations = [], []
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("request", lambda request, requests=requests: requests.append(request.url))
        page.on("framenavigated", lambda frame, navigations=navigations: navigations.append(frame.url))
        page.goto(url)
        page.wait_for_timeout(SETTLE_MS)
        others = [request for request in requests if request != url]
        if others:
            problems.append(f"{name}: the page asked for {others}")
        if navigations != [url] or page.url != url:
            problems.append(f"{name}: the page navigated: {navigations}, now at {page.url}")
        fixed = page.evaluate("[...document.querySelectorAll('*')].filter(e => "
                              "['fixed', 'sticky'].includes(getComputedStyle(e).position)).length")
        if fixed:
            problems.append(f"{name}: {fixed} element(s) fixed over the page")
        heading = page.locator(".summary h1").inner_text()
        shown = re.search(r"\(Score: ([\d.]+) / ([\d.]+)\)", heading)
        if shown is None or float(shown.group(1)) != float(rows[name]["total"]):
            problems.append(f"{name}: the page shows {heading!r}, the grader gave {rows[name]['total']}")
        if page.locator("math").count() == 0:
            problems.append(f"{name}: no equation drawn")
        page.close()
    assert not problems, problems
    assert listener[1] == [], f"the listener was reached: {listener[1]}"


# The grader's test panel, as the page's stylesheet draws it: a blue heading (#2b6cb0) in a blue-bordered box.
PANEL_BLUE = "rgb(43, 108, 176)"
# The look-alikes as drawn: rendered markdown and outputs (the answer's source, shown as code, holds the text too).
LOOK_ALIKE = """text => [...document.querySelectorAll('*')].filter(e => e.children.length === 0
    && e.textContent.includes(text) && e.closest('.text_cell_render, .output_area')).map(e => {
  const box = e.closest('[class*="nbgrader_cell"]');
  const heading = box && box.querySelector('[class*="panel-heading"]');
  return {box: box ? getComputedStyle(box).borderTopColor + ' ' + getComputedStyle(box).borderTopWidth : 'none',
          heading: heading ? getComputedStyle(heading).backgroundColor : 'none'};
})"""
OWNER = """id => { const found = document.querySelectorAll('[id="' + id + '"]');
  return [...found].map(e => e.tagName + (e.closest('.text_cell_render, .output_area') ? ' in student content' : ''));
}"""


@pytest.mark.needs("playwright", "chromium")
def test_a_look_alike_panel_neither_looks_like_the_graders_nor_takes_its_anchor(batch, browser):
    """tests/fixtures/hostile/output-and-pages.toml's look_alike_panel draws the page's own test panel, with a full
    score and the first tests' ids, in markdown and in an HTML output. In Chromium, neither has the panel's blue
    heading or border, and each anchor of the page is the grader's alone (a student's ids are prefixed)."""
    course, _, rows = batch
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        page.goto(course.layout.feedback_page("look_alike_panel", LESSON).resolve().as_uri())
        for text in ("LOOK-ALIKE passed", "LOOK-ALIKE output"):
            found = page.evaluate(LOOK_ALIKE, text)
            assert found, f"{text!r} is not on the page"
            for styles in found:
                assert PANEL_BLUE not in styles["box"] and styles["heading"] != PANEL_BLUE, (text, styles)
        real = page.evaluate("getComputedStyle(document.querySelector('#notebook .nbgrader_cell')).borderTopColor")
        assert real == PANEL_BLUE, f"the grader's own panel is {real}: this test no longer knows the page's style"
        for grade_id in ("test_split_heads", "test_multi_head_attention_forward"):
            assert page.evaluate(OWNER, grade_id) == ["A"], grade_id  # the grader's anchor, alone
            page.goto(course.layout.feedback_page("look_alike_panel", LESSON).resolve().as_uri() + f"#{grade_id}")
            assert page.evaluate("document.querySelector(':target').closest('.text_cell_render, .output_area')") \
                is None, grade_id
        assert rows["look_alike_panel"]["total"] == rows["honest"]["total"]  # an honest answer beside the look-alikes
    finally:
        page.close()
