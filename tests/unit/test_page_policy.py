"""One content security policy for every page the course writes (grader/page_policy.py)."""

from __future__ import annotations

import re

from grader.course import ROOT
from grader.grading.outputs import similarity
from grader.page_policy import CSP, META
from grader.pipeline.safe_feedback_page import harden


def policies(page: str) -> list[str]:
    return re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)


def test_a_feedback_page_and_an_instructors_page_carry_the_same_policy(tmp_path):
    feedback = harden("<html><head></head><body><p>ok</p></body></html>")
    report = similarity.write_html(tmp_path / "similarity.html", "03-parallel-heads", [], compared=0,
                                   threshold=0.9).read_text()
    assert policies(feedback) == policies(report) == [CSP]


def test_the_instructors_pages_take_their_policy_from_the_one_home(tmp_path):
    from grader.grading.outputs import pages

    page = pages.write("base.html.j2", tmp_path / "page.html").read_text()
    assert policies(page) == [CSP] and META in page


def test_no_other_module_or_template_writes_a_policy_of_its_own():
    found = [path.relative_to(ROOT).as_posix() for path in (ROOT / "grader").rglob("*")
             if path.is_file() and path.suffix in {".py", ".j2", ".tpl", ".html"}
             and "Content-Security-Policy\" content=" in path.read_text(encoding="utf-8")]
    assert found == ["grader/page_policy.py"]
    assert "script-src" not in CSP and "default-src 'none'" in CSP
