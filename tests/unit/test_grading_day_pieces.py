"""The instructor's grading day without a kernel: late policy, overview, Canvas CSV, regrade diff, log, similarity."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
import pytest
import tomllib

from grader import notebook
from grader.course import student_notebook
from grader.grading import canvas_csv, gradelog, late, overview, regrade, similarity
from grader.grading.jobs import Result
from grader.grading.late import Lateness
from grader.grading.lms import Roster
from tests.support import FIXTURES, Variant, build

LESSON = "03-parallel-heads"
RELEASE = student_notebook(LESSON)
POINTS = notebook.test_points(nbformat.read(RELEASE, as_version=4))
ANSWERS = tomllib.loads((FIXTURES / "instructor" / f"{LESSON}.toml").read_text())


def answers(name: str) -> dict[str, str]:
    return {k: v.strip() for k, v in ANSWERS[name]["answers"].items()}


def full(**lost: float) -> dict[str, float]:
    return {name: top - lost.get(name, 0) for name, top in POINTS.items()}


# ---------------------------------------------------------------- late policy

def test_the_penalty_is_a_share_of_the_score_per_started_day_capped():
    plugin = late.LatePenalty(percent_per_day=10, max_percent=30)
    assert plugin.late_submission_penalty("ada", 20.0, 0) is None
    assert plugin.late_submission_penalty("ada", 20.0, 60) == pytest.approx(2.0)  # one started day
    assert plugin.late_submission_penalty("ada", 20.0, late.DAY + 1) == pytest.approx(4.0)
    assert plugin.late_submission_penalty("ada", 20.0, 30 * late.DAY) == pytest.approx(6.0)  # the cap


def test_the_course_configures_nbgrader_to_use_the_plugin():
    from grader.course import nbgrader_config

    assert nbgrader_config().AssignLatePenalties.plugin_class == "grader.grading.late.LatePenalty"


@pytest.fixture
def gradebook(gradebook_url):
    """A gradebook with the lesson and three students in it."""
    from nbgrader.api import Gradebook

    url = gradebook_url
    with Gradebook(url) as book:
        book.update_or_create_assignment(LESSON)
        for student in ("ada", "grace", "alan"):
            book.update_or_create_student(student)
    return url


@pytest.mark.filterwarnings("ignore:Object of type <SubmittedAssignment> not in session")  # nbgrader 0.9, harmless
def test_deadlines_and_extensions_reach_nbgrader_and_lateness_is_read_back(gradebook, tmp_path):
    from nbgrader.api import Gradebook

    policy = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"}, extensions={LESSON: {"grace": 48}})
    late.prepare(gradebook, "", LESSON, ["ada", "grace", "alan"], policy)
    submitted_at = datetime(2026, 12, 2, 12, 0)  # a day after the deadline
    with Gradebook(gradebook) as book:
        for student in ("ada", "grace", "alan"):
            book.update_or_create_submission(LESSON, student, timestamp=submitted_at - timedelta(
                days=2 if student == "alan" else 0))
    folder = tmp_path / "submitted" / "alan" / LESSON
    folder.mkdir(parents=True)
    (folder / "collected_from.txt").write_text("turingalan_LATE_1003_5003_03-parallel-heads.ipynb\nabc\n")
    found = late.read(gradebook, "", LESSON, ["ada", "grace", "alan"], tmp_path / "submitted")
    assert found["ada"].seconds == 24 * 3600 and found["ada"].late
    assert found["grace"].seconds == 0 and found["grace"].extension_hours == 48 and not found["grace"].late
    assert found["alan"].lms_marked and found["alan"].seconds == 0 and found["alan"].late
    assert found["alan"].describe() == "late marked late by the LMS"
    assert Lateness(90_000, 1.5).describe() == "late 1 d 1 h (-1.5 points)"


# ---------------------------------------------------------------- overview and Canvas CSV

def autograded(tmp_path: Path, student: str, errors: dict[str, str]) -> Path:
    """The release with an error output in each test cell of `errors` (grade_id -> "Name: message")."""
    nb = nbformat.read(RELEASE, as_version=4)
    for grade_id, cell in notebook.cells_by_id(nb).items():
        if grade_id in errors:
            name, _, value = errors[grade_id].partition(": ")
            cell.outputs = [nbformat.v4.new_output("error", ename=name, evalue=value, traceback=[])]
    path = tmp_path / f"{student}.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_overview_groups_failure_messages_per_exercise_with_their_students(tmp_path):
    first, second = list(POINTS)[:2]
    wrong_axis = "AssertionError: split along the wrong axis"
    results = [Result("ada", "graded", scores=full()),
               Result("alan", "graded", scores=full(**{first: POINTS[first]})),
               Result("grace", "graded", scores=full(**{first: POINTS[first], second: POINTS[second]})),
               Result("eve", "failed", reason="invalid JSON")]
    paths = {"ada": autograded(tmp_path, "ada", {}),
             "alan": autograded(tmp_path, "alan", {first: wrong_axis}),
             "grace": autograded(tmp_path, "grace", {first: wrong_axis, second: "ValueError: bad shape"})}
    view = overview.build(LESSON, results, POINTS, paths, {"grace": Lateness(3600, 2.0)})
    exercise = view.exercises[0]
    assert exercise.failures == [(wrong_axis, ["alan", "grace"])]
    assert exercise.full == pytest.approx(1 / 3) and exercise.mean == pytest.approx(POINTS[first] / 3)
    assert view.students["ada"] == [] and view.failed == {"eve": "invalid JSON"}
    assert view.students["grace"] == [f"{first}: {wrong_axis}", f"{second}: ValueError: bad shape",
                                      "late 1 h 0 min (-2 points)"]
    text = overview.terminal(view)
    assert f"2 x {wrong_axis}  [alan, grace]" in text and "grace: late 1 h 0 min (-2 points)" in text
    page = overview.write_html(tmp_path / "overview.html", view).read_text()
    assert "split along the wrong axis" in page and "alan, grace" in page and "invalid JSON" in page


def test_the_canvas_csv_has_the_import_columns_the_penalty_and_the_roster(tmp_path):
    table = tmp_path / "roster.csv"
    table.write_text("id,name,email,lms_id,section\nada,Ada Lovelace,a@x,1001,A\n")
    results = [Result("ada", "graded", scores=full()), Result("bob", "failed", reason="timeout")]
    path = canvas_csv.write(tmp_path / "canvas.csv", LESSON, results, POINTS,
                            lateness={"ada": Lateness(100, 1.5)}, roster=Roster.read(table))
    rows = list(csv.reader(path.read_text().splitlines()))
    assert rows[0] == [*canvas_csv.IDENTITY, LESSON, *(f"{LESSON}: {e}" for e in POINTS)]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == sum(POINTS.values())
    assert rows[2][:5] == ["Ada Lovelace", "1001", "", "ada", "A"]
    assert float(rows[2][5]) == sum(POINTS.values()) - 1.5  # the late penalty is taken off the total
    assert rows[3][3] == "bob" and rows[3][5:] == [""] * (1 + len(POINTS))  # not graded: left as it was


# ---------------------------------------------------------------- regrade, log

def test_regrade_lists_every_changed_exercise_and_total_and_nothing_else():
    first = list(POINTS)[0]
    before = {"ada": full(), "grace": full()}
    results = [Result("ada", "graded", scores=full(**{first: POINTS[first]})), Result("grace", "graded", scores=full()),
               Result("new", "graded", scores=full())]
    found = regrade.changes(before, results, POINTS)
    total = sum(POINTS.values())
    assert regrade.Change("ada", first, POINTS[first], 0) in found
    assert regrade.Change("ada", regrade.TOTAL, total, total - POINTS[first]) in found
    assert not [c for c in found if c.student == "grace"]
    assert regrade.Change("new", regrade.TOTAL, None, total) in found
    text = regrade.table(LESSON, found, 3)
    assert "2 of 3 students' scores changed" in text and "before" in text
    assert "no score changed" in regrade.table(LESSON, [], 3)


def test_the_log_has_one_line_per_submission_with_its_fields(tmp_path):
    log = tmp_path / "logs" / "x.log"
    gradelog.append(log, LESSON, Result("ada", "graded", scores=full(), seconds=3.21), POINTS)
    gradelog.append(log, LESSON, Result("eve\nx", "failed", reason="bad\x1b[2J", seconds=1), POINTS)
    gradelog.append(log, LESSON, Result("bob", "failed", reason="grader error", detail="Traceback\nError\x1b"), POINTS)
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and lines[2].split("\t")[6] == "Traceback\\nError\\x1b"
    fields = lines[0].split("\t")
    assert fields[1:] == ["ada", LESSON, f"{sum(POINTS.values()):g}/{sum(POINTS.values()):g}", "graded", "3.2"]
    assert "\x1b" not in lines[1] and lines[1].split("\t")[1] == "eve\\nx"


# ---------------------------------------------------------------- similarity

def submissions(tmp_path: Path, variants: dict[str, Variant]) -> dict[str, Path]:
    paths = {}
    for name, variant in variants.items():
        paths[name] = tmp_path / f"{name}.ipynb"
        nbformat.write(build(LESSON, RELEASE, variant), paths[name])
    return paths


def test_similarity_finds_the_planted_copy_and_no_honest_pair(tmp_path):
    paths = submissions(tmp_path, {"ada": Variant("ada"), "grace": Variant("grace", answers=answers("honest_other")),
                                   "eve": Variant("eve", answers=answers("copied")),
                                   "alan": Variant("alan", untouched=True)})
    pairs = similarity.compare(paths, RELEASE)
    assert [(p.a, p.b) for p in pairs] == [("eve", "grace")]
    assert pairs[0].slices[0] and pairs[0].slices[1]
    page = similarity.write_html(tmp_path / "similar.html", LESSON, pairs, compared=4).read_text()
    assert "<mark>" in page and "eve and grace" in page and "changes no grade" in page


def test_untouched_notebooks_match_nothing_the_starter_code_is_excluded(tmp_path):
    paths = submissions(tmp_path, {name: Variant(name, untouched=True) for name in ("a", "b", "c")})
    assert similarity.compare(paths, RELEASE, threshold=0.01) == []
