"""grader.grading.outputs.feedback_bundle: each student's page named for the LMS's upload, in a folder and a .zip."""

from __future__ import annotations

import zipfile

from grader.grading.intake.collect import Submission
from grader.grading.outputs import feedback_bundle
from grader.grading.running.jobs import Result
from tests.support import grade_rows


def test_pages_are_named_as_the_lms_wrote_each_submission(tmp_path):
    results = [Result("canvas_1001", "graded", scores={"a": 1.0}), Result("ada", "graded", scores={"a": 1.0}),
               Result("eve", "failed", reason="x")]
    rows = grade_rows("01-single-head", results, {"a": 1.0})
    rows[1] = type(rows[1])(**{**rows[1].__dict__, "submission": Submission(
        "canvas_1001", None, upload_prefix="lovelaceada_1001_70001_")})
    pages = tmp_path / "feedback"
    for student in ("canvas_1001", "ada", "eve"):
        (pages / student).mkdir(parents=True)
        (pages / student / "page.html").write_text(f"{student}'s page")
    archive = feedback_bundle.write(tmp_path / "bundle", "01-single-head", rows,
                                    lambda student: pages / student / "page.html")
    names = sorted(p.name for p in (tmp_path / "bundle").iterdir())
    assert names == ["ada_01-single-head-feedback.html", "lovelaceada_1001_70001_01-single-head-feedback.html"]
    with zipfile.ZipFile(archive) as handle:
        assert sorted(handle.namelist()) == names
        assert handle.read(names[1]) == b"canvas_1001's page"
    before = archive.read_bytes()
    feedback_bundle.write(tmp_path / "bundle", "01-single-head", rows, lambda student: pages / student / "page.html")
    assert archive.read_bytes() == before  # the same pages give the same .zip
