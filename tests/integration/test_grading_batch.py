"""One grading batch, end to end: broken submissions next to honest ones, graded in one run.

tests/fixtures/grading/batch.toml describes every file of an LMS download (see its header). They
are built from the lesson's release, zipped, and graded by `python -m grader autograde` with the
local process pool, as an instructor runs it. Each file must come out exactly as the fixture
says (scores per test cell, status, flags), the honest submissions of the same batch with their
usual scores, and no feedback file may contain a hidden test.
"""

from __future__ import annotations

import csv
import html
import io
import re
import subprocess
import sys
import tomllib
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from multiprocessing import get_context
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader.grading.autograde import main as autograde
from grader.grading.running.jobs import Job
from grader.grading.running.triage import FLAGS
from grader.grading.running.worker import grade
from grader.student.submission_names import SUBMISSION_TIME_FORMAT, submission_filename
from tests.support import FIXTURES, Course, batch_scores, build_notebook, exercise, make_course, points_of, secret_lines

pytestmark = pytest.mark.more_cases  # every row of what a batch survives; make test grades one batch

LESSON = "03-parallel-heads"  # the model lesson; the grader itself is lesson-generic
SPEC = FIXTURES / "grading" / "batch.toml"
CASES = tomllib.loads(SPEC.read_text())
TIMEOUT = 15  # seconds per cell: the infinite loop costs this once
MEMORY_GIB = 2  # address space per kernel: a kernel with NumPy starts at about 1 GiB
ATTEMPT = "20260115-100000"


def download(name: str, spec: dict, release: Path) -> tuple[str, bytes]:
    """(file name, content) of one fixture file, as the LMS hands it out."""
    student = spec.get("student", name)
    if "raw" in spec:
        content = (SPEC.parent / spec["raw"]).read_bytes()
    else:
        content = nbformat.writes(build_notebook(LESSON, release, spec)).encode()
    if "name" in spec:
        return spec["name"].format(lesson=LESSON, student=student), content
    return submission_filename(LESSON, student, spec.get("attempt", ATTEMPT)), content


def expected(name: str, release: Path) -> dict[str, float]:
    return batch_scores(LESSON, release, CASES[name])


def hidden_test_lines(lesson: str) -> set[str]:
    """Lines of the reference notebook's hidden tests that no visible cell shows."""
    return secret_lines(lesson, regions=("HIDDEN TESTS",))


def text_of(page: Path) -> str:
    """An HTML page's text, as a browser shows it (syntax highlighting splits lines into tags)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


@dataclass
class Batch:
    course: Course
    release: Path
    zip: Path
    run: subprocess.CompletedProcess
    rows: dict[str, dict[str, str]]

    def state(self, step: str, student: str) -> Path:
        return getattr(self.course.layout, step) / student / LESSON


def read_grades(course: Course) -> dict[str, dict[str, str]]:
    with course.layout.grades_csv(LESSON).open() as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Batch:
    root = tmp_path_factory.mktemp("grading")
    course = make_course(root / "course", cell_timeout=TIMEOUT)
    release = course.lessons / LESSON / f"{LESSON}.ipynb"
    archive = root / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name, spec in CASES.items():
            filename, content = download(name, spec, release)
            handle.writestr(f"{LESSON}/{filename}", content)
    run = subprocess.run([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(course.root),
                          "--source", str(archive), "--workers", "2", "--timeout", str(TIMEOUT),
                          "--memory-limit", str(MEMORY_GIB)], capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"autograde failed:\n{run.stdout}\n{run.stderr[-5000:]}"
    return Batch(course, release, archive, run, read_grades(course))


@pytest.mark.parametrize("name", list(CASES))
def test_each_file_of_the_batch_comes_out_as_its_fixture_says(batch, name):
    spec = CASES[name]
    student, status = spec.get("student", name), spec.get("status", "graded")
    if status == "not collected":
        filename = spec["name"].format(lesson=LESSON, student=student)
        assert student not in batch.rows
        # Named by its path in the download (a Moodle folder names the student).
        line = rf"^    (?:\S*/)?{re.escape(filename)}: .*{re.escape(spec['reason'])}"
        assert re.search(line, batch.run.stdout, re.M), (
            batch.run.stdout)
        return
    if status == "superseded":  # the student's latest attempt was collected instead
        attempts = [other.get("attempt", ATTEMPT) for key, other in CASES.items()
                    if other.get("student", key) == student]
        stamp = (batch.state("submitted", student) / "timestamp.txt").read_text()
        latest = datetime.strptime(max(attempts), SUBMISSION_TIME_FORMAT).strftime("%Y-%m-%d %H:%M:%S")
        assert spec["attempt"] < max(attempts) and stamp.startswith(latest), stamp
        return
    row = batch.rows[student]
    assert row["status"] == status, row
    if status == "failed":
        assert spec["reason"] in row["notes"], row
        assert all(row[grade_id] == "" for grade_id in points_of(batch.release)) and row["total"] == ""
        assert not batch.state("autograded", student).exists() and not batch.state("feedback", student).exists()
        return
    scores = {grade_id: float(row[grade_id]) for grade_id in points_of(batch.release)}
    assert scores == expected(name, batch.release)
    assert float(row["total"]) == sum(scores.values())
    flags = sorted(flag.partition(":")[0] for flag in row["notes"].split("; ") if flag)
    assert flags == sorted(spec.get("flags", [])), row["notes"]
    assert (batch.state("feedback", student) / f"{LESSON}.html").is_file()


def test_summary_counts_every_kind_of_outcome(batch):
    counts = {title: int(n) for title, n in re.findall(
        r"^  (graded|failed to grade|needing manual review|timed out|hit the memory limit|not collected \(files\))"
        r"\s+(\d+)\b", batch.run.stdout, re.M)}
    statuses = [spec.get("status", "graded") for spec in CASES.values()]
    assert counts["graded"] == statuses.count("graded")
    assert counts["failed to grade"] == statuses.count("failed")
    assert counts["not collected (files)"] == statuses.count("not collected")
    flags = [set(spec.get("flags", [])) for spec in CASES.values() if spec.get("status", "graded") == "graded"]
    assert counts["timed out"] == sum("timeout" in f for f in flags)
    assert counts["hit the memory limit"] == sum("memory-limit" in f for f in flags)
    review = {name for name, kind in FLAGS.items() if kind.review}
    assert counts["needing manual review"] == sum(bool(review & f) for f in flags)


def test_progress_is_one_line_per_submission_outside_a_terminal(batch):
    students = {spec.get("student", name) for name, spec in CASES.items()
                if spec.get("status", "graded") in ("graded", "failed")}
    lines = re.findall(r"^\[(\d+)/(\d+)\] (\S+): ", batch.run.stderr, re.M)
    assert sorted(student for _, _, student in lines) == sorted(students)
    assert {int(total) for _, total, _ in lines} == {len(students)}


def test_feedback_shows_failed_tests_and_their_messages_but_no_hidden_test(batch):
    secrets = hidden_test_lines(LESSON)
    assert secrets, "the reference notebook has no hidden-test lines to look for"
    # The hidden tests did run: the autograded copy (never published) holds them.
    autograded = batch.state("autograded", "reference") / f"{LESSON}.ipynb"
    assert any(line in autograded.read_text() for line in secrets)
    pages = sorted(batch.course.layout.feedback.rglob("*.html"))
    assert len(pages) == sum(row["status"] == "graded" for row in batch.rows.values())
    for page in pages:
        leaked = [line for line in secrets if line in text_of(page)]
        assert not leaked, f"{page} shows hidden tests: {leaked}"
    page = batch.state("feedback", "untouched") / f"{LESSON}.html"
    untouched, links = text_of(page), page.read_text()
    for grade_id, points in points_of(batch.release).items():  # the page's list: each exercise, linked by its id
        assert re.search(rf'href="#{grade_id}">[^<]*</a> \(Score: 0(\.0)? / {points:g}(\.0)?\)', links), grade_id
    assert "NotImplementedError" in untouched


def test_memory_limit_reaches_the_kernel(batch):
    autograded = nbformat.read(batch.state("autograded", "memory_hog") / f"{LESSON}.ipynb", as_version=4)
    solution, _ = exercise(autograded, "first")
    printed = "".join(o.get("text", "") for o in solution.outputs)
    assert f"address space limit: {MEMORY_GIB * 1024**3}" in printed
    assert any(o.get("ename") == "MemoryError" for o in solution.outputs)


def test_score_plot_is_written(batch):
    png = batch.course.layout.grades_plot(LESSON)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rerun_regrades_only_what_changed_on_any_executor(batch, tmp_path, monkeypatch):
    """Idempotent re-runs, through an executor passed in (here a spawn-started process pool, as a
    Dask cluster's executor would be): nothing changed, nothing is re-run; a new attempt is. Each batch
    opens the gradebook once (its workers, in processes of their own here, never open it themselves)."""
    opened = []
    open_it = Gradebook.__init__

    def counted(self, *args, **kwargs) -> None:
        opened.append(args[0] if args else kwargs["db_url"])
        open_it(self, *args, **kwargs)

    monkeypatch.setattr(Gradebook, "__init__", counted)
    course, before = batch.course, read_grades(batch.course)
    stamps = {student: (batch.state("autograded", student) / f"{LESSON}.ipynb").stat().st_mtime_ns
              for student, row in before.items() if row["status"] == "graded"}
    out = io.StringIO()
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as executor:
        again = autograde(lesson=LESSON, course=course.root, executor=executor, progress=io.StringIO(), out=out)
        assert len(opened) == 1, opened
        assert all(o.cached for o in again.results if o.status == "graded")
        assert read_grades(course) == before
        assert stamps == {student: (batch.state("autograded", student) / f"{LESSON}.ipynb").stat().st_mtime_ns
                          for student in stamps}

        # The untouched student hands in a later attempt with full answers: only it is regraded.
        newer = tmp_path / "newer"
        newer.mkdir()
        later = submission_filename(LESSON, "untouched", "20260201-080000")
        (newer / later).write_text(nbformat.writes(build_notebook(LESSON, batch.release, {})))
        third = autograde(lesson=LESSON, course=course.root, source=newer, executor=executor,
                          progress=io.StringIO(), out=out)
        regraded = [o.student for o in third.results if o.status == "graded" and not o.cached]
        assert regraded == ["untouched"]
        assert len(opened) == 2, opened  # once more, for the second batch
        assert read_grades(course)["untouched"]["total"] == f"{sum(points_of(batch.release).values()):g}"

        job = Job(str(course.root), LESSON, "reference", force=True, timeout=TIMEOUT, memory_limit=MEMORY_GIB * 1024**3)
        forced = executor.submit(grade, job).result()
        assert forced.status == "graded" and not forced.cached and not forced.scores  # the batch reads them
        course.add_scores([job], [forced])
        assert forced.scores == expected("reference", batch.release)
