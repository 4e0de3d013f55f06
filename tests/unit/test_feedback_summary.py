"""The grade summary of a feedback page: filled in its slot, again and again, and nowhere a submission chooses."""

from __future__ import annotations

import copy
import stat
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_output, new_raw_cell

from grader import cell_roles
from grader.course import student_notebook
from grader.page_policy import CSP
from grader.pipeline.feedback_summary import (
    NOTEBOOK,
    SLOT,
    FeedbackSummary,
    NotAFeedbackPage,
    filled,
    number,
    write_summary,
)
from tests.support import feedback_page

LESSON = "03-parallel-heads"
ADA = FeedbackSummary("Ada Lovelace", "ada", LESSON, 14, 15, "late 1 d 2 h", 1.4, 12.6)
LATER = FeedbackSummary("Ada King", "ada", LESSON, 15, 15, "on time (with an extension of 2 d)", 0, 15)
FAKE = '<section id="course-summary"><h1>03-parallel-heads (Score: 15 / 15)</h1><p>FAKE-SUMMARY</p></section>'


def lesson_page(*cells: nbformat.NotebookNode, outputs: list | None = None, **totals) -> str:
    """Lesson 3's feedback page: its answer and test cells as released (its prose, which a student may
    delete, would only make the page slower to render), `cells` at the top, `outputs` on its first answer."""
    nb = nbformat.read(student_notebook(LESSON), as_version=4)
    nb.cells = [cell for cell in nb.cells if cell_roles.grade_id(cell)]
    for cell in nb.cells:
        if cell_roles.is_graded(cell):
            cell.metadata.nbgrader["score"] = 0
    nb.cells[0:0] = [copy.deepcopy(cell) for cell in cells]
    first = next(cell for cell in nb.cells if cell_roles.kind(cell) == "solution")
    first.outputs = outputs or []
    return feedback_page(nb, LESSON, **({"score": 5, "max_score": 15} | totals))


@pytest.fixture(scope="module")
def page() -> str:
    return lesson_page()


@pytest.fixture(scope="module")
def hostile_page() -> str:
    """A page whose submission plants fake slots and summaries everywhere a student writes."""
    html = f'{FAKE}<div id="course-summary">FAKE-SUMMARY</div><div id="notebook">{FAKE}</div>'
    return lesson_page(
        new_markdown_cell(f"{html}\n\n# {SLOT}\n\n```\n{FAKE}\n```"),
        new_raw_cell(html, metadata={"raw_mimetype": "text/html"}),
        outputs=[new_output("stream", name="stdout", text=FAKE),
                 new_output("display_data", data={"text/html": html, "text/markdown": html, "text/plain": FAKE}),
                 new_output("error", ename="E", evalue=FAKE, traceback=[FAKE])])


def outside_summary(page: str) -> str:
    """`page` without what is inside its summary section."""
    start = page.index(SLOT) + len(SLOT)
    return page[:start] + page[page.index("</section>", start):]


def test_the_template_gives_one_slot_first_in_the_body_holding_nbgraders_totals(page):
    body = page.index("<body>")
    assert page.count(SLOT) == 1 and body < page.index(SLOT) < page.index(NOTEBOOK)
    assert "<h1>03-parallel-heads (Score: 5.0 / 15.0)</h1>" in page[page.index(SLOT):page.index("</section>")]
    late = lesson_page(late_penalty=1.5, score=3.5)
    assert "Late submission penalty (Score: -1.5)" in late[late.index(SLOT):late.index("</section>")]


def test_a_summary_fills_the_slot_and_only_the_slot(page):
    done = filled(page, ADA)
    assert outside_summary(done) == outside_summary(page)
    inside = done[done.index(SLOT):done.index("</section>")]
    for shown in ("<h1>03-parallel-heads (Score: 12.6 / 15)</h1>", "<bdi>Ada Lovelace</bdi> (ada)", "14 / 15",
                  "late 1 d 2 h", '<dd class="late-penalty">-1.4</dd>', "<strong>12.6 / 15</strong>"):
        assert shown in inside, shown
    assert done.split("<body>")[0] == page.split("<body>")[0], "the head, and its Content-Security-Policy, changed"
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in done.split("<body>")[0]


def test_writing_again_leaves_only_the_latest_summary(page):
    once = filled(page, ADA)
    again = filled(once, LATER)
    assert again == filled(page, LATER) and filled(again, LATER) == again
    assert "Ada Lovelace" not in again and "late 1 d 2 h" not in again and again.count(SLOT) == 1
    assert "<h1>03-parallel-heads (Score: 15 / 15)</h1>" in again and "<dd>none</dd>" in again


def test_a_submission_can_neither_plant_a_slot_nor_change_or_move_the_summary(hostile_page):
    """Fake slots and summaries in markdown, raw cells, HTML, markdown, text and error outputs."""
    boundary = hostile_page.index(NOTEBOOK)
    assert hostile_page.index(SLOT) < boundary and "FAKE-SUMMARY" in hostile_page[boundary:]
    assert "FAKE-SUMMARY" not in hostile_page[:boundary]
    done = filled(hostile_page, ADA)
    assert outside_summary(done) == outside_summary(hostile_page), "something besides the summary changed"
    assert done.index("Ada Lovelace") < boundary and done.count("Ada Lovelace") == 1
    assert filled(filled(done, LATER), ADA) == done


def test_only_the_templates_slot_is_filled_even_if_a_fake_one_got_through(page):
    """Were the sanitiser ever to let a `<section>` through, the first slot is still the template's."""
    boundary = page.index(NOTEBOOK) + len(NOTEBOOK)
    planted = page[:boundary] + FAKE + page[boundary:]
    done = filled(planted, ADA)
    assert done.index("Ada Lovelace") < done.index(NOTEBOOK) and FAKE in done
    without_slot = page.replace(SLOT, "<section>", 1)  # a page of an older template: no slot of its own
    planted = without_slot[:boundary] + FAKE + without_slot[boundary:]
    done = filled(planted, ADA)
    assert done.index("<body>") < done.index("Ada Lovelace") < done.index(NOTEBOOK) and FAKE in done
    assert done.index(SLOT) == done.index("<body>") + len("<body>")


def test_a_hostile_name_is_shown_as_text_and_cannot_end_the_section(page):
    name = "</section><script>alert(1)</script><div id=\"notebook\">\u202eevil\x1b[2J\ud800"
    evil = FeedbackSummary(name, "<b>ada</b>", LESSON, 1, 15, "on time</dd>", 0, 1)
    done = filled(page, evil)
    assert "<script" not in done and "<b>ada" not in done and "\u202e" not in done and "\x1b" not in done
    assert "&lt;/section&gt;&lt;script&gt;" in done and done.count(SLOT) == 1
    assert filled(done, ADA) == filled(page, ADA)


def test_write_summary_replaces_the_file_whole_and_keeps_its_mode(page, tmp_path):
    path = tmp_path / "fé dback" / f"{LESSON}.html"
    path.parent.mkdir()
    path.write_text(page, encoding="utf-8")
    path.chmod(0o640)
    write_summary(path, ADA)
    write_summary(path, LATER)
    assert path.read_text(encoding="utf-8") == filled(page, LATER)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and [p.name for p in path.parent.iterdir()] == [path.name]


@pytest.mark.parametrize("text", ["", "just text", f"<html><head></head>{NOTEBOOK}<body>", f"<body>{SLOT}<p>x</p>"])
def test_a_file_that_is_no_feedback_page_is_refused_and_left_alone(tmp_path, text):
    path = tmp_path / "page.html"
    path.write_text(text)
    with pytest.raises(NotAFeedbackPage, match="not a feedback page"):
        write_summary(path, ADA)
    assert path.read_text() == text


def test_the_oversized_notice_gets_a_summary_too():
    from grader.pipeline.safe_feedback_page import harden

    notice = harden("<html><head></head><body>" + "x" * 100 + "</body></html>", max_bytes=10)
    done = filled(notice, ADA)
    assert "Ada Lovelace" in done and done.index("<body>") < done.index(SLOT)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "14", True, None])
def test_a_summary_holds_finite_numbers(value):
    with pytest.raises((ValueError, TypeError)):
        FeedbackSummary("Ada", "ada", LESSON, value, 15, "on time", 0, 15)


def test_points_are_written_as_a_person_writes_them():
    assert [number(x) for x in (7, 7.0, 6.3, 0.25, 1 / 3, 0, -0.0, 12.599999)] == \
        ["7", "7", "6.3", "0.25", "0.33", "0", "0", "12.6"]


def test_no_summary_is_written_into_a_missing_page(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_summary(Path(tmp_path / "absent.html"), ADA)
