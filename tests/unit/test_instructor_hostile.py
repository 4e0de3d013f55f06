"""The hostile suite's attacks on the grading-day features (tests/fixtures/hostile/no-kernel/), no kernel."""

from __future__ import annotations

import csv
import re
import tomllib
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.course import student_notebook
from grader.errors import BadDownload
from grader.grading.intake.collect import collect
from grader.grading.intake.ids import SAFE_ID
from grader.grading.intake.lms import registry
from grader.grading.intake.lms.canvas import Canvas
from grader.grading.intake.people import People
from grader.grading.intake.roster import Roster
from grader.grading.outputs import overview, similarity
from grader.grading.policy import grades, late
from grader.grading.running.jobs import Result
from tests.support import FIXTURES, Variant, blackboard_attempt, build, grade_rows, lms_import

LESSON = "03-parallel-heads"
RELEASE = student_notebook(LESSON)
POINTS = cell_roles.test_points(nbformat.read(RELEASE, as_version=4))
ATTACKS = tomllib.loads((FIXTURES / "hostile" / "no-kernel" / "grading-day.toml").read_text())
NOW = datetime(2026, 12, 15, tzinfo=UTC)
UNSAFE = re.compile(r"[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def collect_into(root: Path, archive: Path, roster: str = ""):
    people = People(root / "people.json")
    if roster:
        people.apply_roster(Roster.parse(roster))
    return collect(LESSON, root / "submitted", root / "attempts", archive, people=people, now=NOW)


def test_hostile_names_in_a_canvas_zip_are_refused_inert_and_write_nothing(tmp_path):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name in ATTACKS["zip_names"].values():
            handle.writestr(name, "{}")
        handle.writestr("lovelaceada_1000_2000_03-parallel-heads.ipynb", "{}")
    root = tmp_path / "course"
    with pytest.raises(BadDownload) as refused:  # names no LMS writes: the download is not Canvas's as it came
        collect_into(root, archive)
    message = str(refused.value)
    assert not UNSAFE.search(message.replace("\n", "")) and "absolute" not in message
    assert not root.exists() and not Path("/tmp/outside_1002_2002_03-parallel-heads.ipynb").exists()


def test_hostile_names_that_fit_canvas_give_ids_from_the_number_only_and_are_reported_inert(tmp_path):
    fitting = {key: name for key, name in ATTACKS["zip_names"].items() if Canvas().read_download({name: None})}
    assert set(fitting) >= {"terminal_escape", "bidi", "newline", "formula"}
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name in fitting.values():
            handle.writestr(name, "{}")
        handle.writestr("lovelaceada_1000_2000_03-parallel-heads.ipynb", "{}")
    root = tmp_path / "course"
    done = collect_into(root, archive)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != archive]
    assert all(root in p.parents for p in written), written
    assert all(SAFE_ID.fullmatch(student) for student in done.students), done.students
    assert "canvas_1000" in done.students and len(done.students) == len(fitting) + 1
    for note in [*done.skipped, *done.review]:
        assert not UNSAFE.search(note.file) and not UNSAFE.search(note.reason), note


@pytest.mark.parametrize("attack", sorted(ATTACKS["identity"]))
def test_no_file_name_a_student_chooses_takes_a_classmates_place(tmp_path, attack):
    case = ATTACKS["identity"][attack]
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name, (content, when) in case["files"].items():
            handle.writestr(zipfile.ZipInfo(name, date_time=tuple(when)), content)
    root = tmp_path / "course"
    done = collect_into(root, archive, case.get("roster", ""))
    for student, content in case["graded"].items():  # each keeps exactly their own notebook
        assert (root / "submitted" / student / LESSON / f"{LESSON}.ipynb").read_text() == content, student
        assert not done.submissions[student].lms_late or student in case.get("late", [])
    assert sorted(done.students) == sorted(case["graded"])
    for student in case.get("late", []):
        assert done.submissions[student].lms_late


@pytest.mark.parametrize("lms", [lms.name for lms in registry.importers()])
def test_a_hostile_roster_reaches_every_lms_import_file_as_text_never_a_formula(tmp_path, lms):
    text = ATTACKS["roster"]["csv"]
    roster = Roster.parse(text)
    results = [Result(s.id, "graded", scores=dict(POINTS)) for s in roster.students]
    written, _ = lms_import(lms, tmp_path / f"{lms}.csv", LESSON, grade_rows(LESSON, results, POINTS, roster=text),
                            POINTS)
    assert len(written) >= 4
    for row in written[1:]:
        assert not any(cell.startswith(FORMULA) for cell in row), row
    assert any(cell.startswith("'=cmd") for row in written for cell in row), written  # fred's name, escaped


def test_a_blackboard_receipts_name_reaches_the_upload_file_as_text_never_a_formula(tmp_path):
    name = ATTACKS["blackboard"]["formula_name"]
    archive = tmp_path / "bb.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for entry, content in blackboard_attempt("Lesson 3", "eve", name, (2026, 11, 30, 10, 0, 0),
                                                 {f"{LESSON}.ipynb": "{}"}).items():
            handle.writestr(zipfile.ZipInfo(entry, date_time=(2026, 11, 30, 10, 0, 0)), content)
    people = People(tmp_path / "people.json")
    done = collect(LESSON, tmp_path / "submitted", tmp_path / "attempts", archive, people=people, now=NOW)
    assert done.format == "blackboard" and done.students == ["blackboard_eve"]
    rows = grades.build(LESSON, [Result("blackboard_eve", "graded", scores=dict(POINTS))], POINTS, people=people,
                        submissions=done.submissions, policy=late.LatePolicy(), penalty=late.LatePenalty(),
                        overrides={})
    written, _ = lms_import("blackboard", tmp_path / "blackboard.csv", LESSON, rows, POINTS)
    assert written[1][:3] == ["'=HYPERLINK(\"http://evil.example\")", "", "eve"], written
    assert not any(cell.startswith(FORMULA) for row in written for cell in row)


def test_hostile_failure_messages_are_inert_in_the_terminal_and_on_the_page(tmp_path):
    first = list(POINTS)[0]
    results, paths = [], {}
    for name, message in ATTACKS["messages"].items():
        nb = nbformat.read(RELEASE, as_version=4)
        ename, _, evalue = message.partition(": ")
        cell_roles.cells_by_id(nb)[first].outputs = [
            nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])]
        paths[name] = tmp_path / f"{name}.ipynb"
        nbformat.write(nb, paths[name])
        results.append(Result(name, "graded", scores={**POINTS, first: 0.0}))
    view = overview.build(LESSON, grade_rows(LESSON, results, POINTS), POINTS, paths)
    text = overview.terminal(view)
    assert not UNSAFE.search(text.replace("\n", "")), text
    assert not any(line.startswith("INJECTED") for line in text.splitlines())
    page = overview.write_html(tmp_path / "overview.html", view).read_text()
    assert "<script" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert "default-src 'none'" in page


def test_answers_crafted_against_the_similarity_report_are_escaped_and_given_code_matches_no_one(tmp_path):
    markup, padding = ATTACKS["similarity"]["markup"].strip(), ATTACKS["similarity"]["given_padding"].strip()
    paths = {}
    for name, code in [("mallory", markup), ("pad1", padding), ("pad2", padding)]:
        paths[name] = tmp_path / f"{name}.ipynb"
        nbformat.write(build(LESSON, RELEASE, Variant(name, untouched=True)), paths[name])
        nb = nbformat.read(paths[name], as_version=4)
        cell_roles.cells_by_id(nb)["split_heads"].source = code
        nbformat.write(nb, paths[name])
    assert similarity.compare(paths, RELEASE) == []  # two students who pasted given code are not a pair
    pairs = similarity.compare({"a": paths["mallory"], "b": paths["mallory"]}, RELEASE, threshold=0.0)
    page = similarity.write_html(tmp_path / "s.html", LESSON, pairs, compared=2).read_text()
    assert "<script" not in page and "<img" not in page and "</pre><script>" not in page


def test_a_huge_answer_costs_the_similarity_report_no_more_than_its_cap(tmp_path):
    huge = tmp_path / "huge.ipynb"
    nb = build(LESSON, RELEASE, Variant("huge", untouched=True))
    cell_roles.cells_by_id(nb)["split_heads"].source = "\n".join(f"v{i} = w{i} * {i}" for i in range(100_000))
    nbformat.write(nb, huge)
    [pair] = similarity.compare({"a": huge, "b": huge}, RELEASE, threshold=0.0, min_tokens=0)
    assert len(pair.code[0]) == similarity.MAX_CODE


def test_an_override_reason_with_escapes_is_inert_in_every_csv_the_overview_and_the_terminal(tmp_path):
    from grader.grading.outputs import report
    from grader.grading.policy.overrides import TOTAL, Override

    reason = ATTACKS["override"]["reason"]
    roster = f'Student,ID,SIS User ID,SIS Login ID,Section\n"{ATTACKS["names"]["terminal"]}",1001,S1,mal,A\n'
    rows = grade_rows(LESSON, [Result("canvas_1001", "graded", scores=dict(POINTS))], POINTS, roster=roster,
                      overrides={"canvas_1001": {TOTAL: Override(1.0, reason, "then")}})
    written = [report.write_csv(tmp_path / "grades.csv", rows, POINTS)]
    for lms in registry.importers():
        lms_import(lms.name, tmp_path / f"{lms.name}.csv", LESSON, rows, POINTS)
        written.append(tmp_path / f"{lms.name}.csv")
    for path in written:
        text = path.read_bytes().decode("utf-8")
        assert not UNSAFE.search(text.replace("\r\n", "")), (path.name, text)  # only csv's own row ends
    notes = list(csv.DictReader((tmp_path / "grades.csv").read_text().splitlines()))[0]["notes"]
    assert notes == "override total: 1 (copied\\x1b]0;owned\\x07 from\\r\\nINJECTED: a classmate\\u202e)"
    view = overview.build(LESSON, rows, POINTS, {})
    text = overview.terminal(view)
    assert not UNSAFE.search(text.replace("\n", "")), text
    assert not any(line.lstrip().startswith("INJECTED") for line in text.splitlines()), text
    page = overview.write_html(tmp_path / "overview.html", view).read_text()
    assert not UNSAFE.search(page.replace("\n", "")), page
    assert "copied\\x1b]0;owned\\x07 from\\r\\nINJECTED" in page


def test_a_file_name_naming_a_classmate_never_changes_whose_name_is_shown(tmp_path):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(zipfile.ZipInfo(ATTACKS["spoof"]["canvas_entry"], date_time=(2026, 11, 30, 9, 0, 0)),
                        nbformat.writes(nbformat.read(RELEASE, as_version=4)))
    people = People(tmp_path / "people.json")
    people.apply_roster(Roster.parse('Student,ID,SIS User ID,SIS Login ID,Section\n"Hopper, Grace",1002,S2,grace,A\n'
                                     '"Turing, Alan",1004,S4,alan,B\n'))
    done = collect(LESSON, tmp_path / "submitted", tmp_path / "attempts", archive, people=people, now=NOW)
    assert done.students == ["canvas_1004"] and people.persons["canvas_1004"].name == "Turing, Alan"
    assert people.persons["canvas_1002"].name == "Hopper, Grace"
