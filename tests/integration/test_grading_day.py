"""An instructor's grading day, end to end, as `python -m grader autograde` runs it.

A Canvas "Download Submissions" zip of Lesson 3 with a roster: an on-time reference answer, an
honest answer written another way (late by the clock, inside its extension), a copy of that answer
with every name changed (marked late by Canvas, a day past the deadline), an untouched notebook,
and a file from someone not on the roster. The batch must collect by roster id, flag and penalise
the late one, write the overview and the Canvas CSV, find the one copied
pair and no honest one; then, after one of the lesson's checks is made stricter and the lesson
released again, `--regrade` must print exactly the scores that changed.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.course import ROOT, reference_notebook
from grader.layout import GRADEBOOK, GRADES, GRADING_LOGS
from tests.support import FIXTURES, Variant, build

pytestmark = pytest.mark.more_cases  # a Canvas download, a roster, late work and a regrade

LESSON = "03-parallel-heads"
ANSWERS = tomllib.loads((FIXTURES / "instructor" / f"{LESSON}.toml").read_text())
STRICTER = "test_per_head_change"  # the check made stricter before the regrade
ROSTER = """id,name,email,lms_id,section
ada,Ada Lovelace,ada@uni.example,1001,A
grace,Grace Hopper,grace@uni.example,1002,A
eve,Eve Moneypenny,eve@uni.example,1003,B
alan,Alan Turing,alan@uni.example,1004,B
"""
# Canvas names: <sortable name squashed>_[LATE_]<user id>_<submission id>_<file>; the entry time is the LMS's.
DOWNLOADS = {
    "ada": ("lovelaceada_1001_70001_03-parallel-heads.ipynb", (2026, 11, 30, 10, 0, 0)),
    "grace": ("hoppergrace_1002_70002_03-parallel-heads.ipynb", (2026, 12, 2, 9, 0, 0)),
    "eve": ("moneypennyeve_LATE_1003_70003_03-parallel-heads-1.ipynb", (2026, 12, 2, 12, 0, 0)),
    "alan": ("turingalan_1004_70004_03-parallel-heads.ipynb", (2026, 11, 30, 11, 0, 0)),
    "mallory": ("mallorymal_1999_70009_03-parallel-heads.ipynb", (2026, 11, 30, 11, 0, 0)),
}
DEADLINE = "2026-12-01 12:00:00 UTC"


def answers(name: str) -> dict[str, str]:
    return {k: v.strip() for k, v in ANSWERS[name]["answers"].items()}


def autograde(root: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(root), *args],
                          cwd=ROOT, text=True, capture_output=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading-day")
    source = root / "source"
    (source / LESSON).mkdir(parents=True)
    shutil.copy(reference_notebook(LESSON), source / LESSON / f"{LESSON}.ipynb")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(source)!r}\n"
        f"c.CourseDirectory.db_url = {f'sqlite:///{root / GRADEBOOK}?timeout=60'!r}\n"
        "c.Execute.timeout = 30\n"
        f"c.LatePolicy.deadlines = {{{LESSON!r}: {DEADLINE!r}}}\n"
        f"c.LatePolicy.extensions = {{{LESSON!r}: {{'grace': 48}}}}\n"
        "c.LatePenalty.percent_per_day = 10\n")
    subprocess.run([sys.executable, "-m", "grader", "release", LESSON, "--course", str(root)], check=True,
                   capture_output=True, text=True, timeout=900)
    release = root / "lessons" / LESSON / f"{LESSON}.ipynb"
    notebooks = {"ada": build(LESSON, release, Variant("ada")),
                 "grace": build(LESSON, release, Variant("grace", answers=answers("honest_other"))),
                 "eve": build(LESSON, release, Variant("eve", answers=answers("copied"))),
                 "alan": build(LESSON, release, Variant("alan", untouched=True)),
                 "mallory": build(LESSON, release, Variant("mallory"))}
    download = root / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for student, (name, when) in DOWNLOADS.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when), nbformat.writes(notebooks[student]))
    roster = root / "roster.csv"
    roster.write_text(ROSTER)
    first = autograde(root, "--source", str(download), "--roster", str(roster), "--workers", "2")

    # A fix to the lesson's checks: one test cell made stricter, the lesson released again, everyone regraded.
    nb = nbformat.read(source / LESSON / f"{LESSON}.ipynb", as_version=4)
    cell_roles.cells_by_id(nb)[STRICTER].source += "\nassert False, 'a stricter check'"
    nbformat.write(nb, source / LESSON / f"{LESSON}.ipynb")
    subprocess.run([sys.executable, "-m", "grader", "release", LESSON, "--course", str(root)], check=True,
                   capture_output=True, text=True, timeout=900)
    second = autograde(root, "--regrade", "--roster", str(roster), "--workers", "2")
    return root, first, second


def grades_dir(root: Path) -> Path:
    return root / GRADES


def grades(root: Path) -> dict[str, dict[str, str]]:
    """The grades CSV's rows by student."""
    text = (grades_dir(root) / f"{LESSON}.csv").read_text()
    return {row["student"]: row for row in csv.DictReader(text.splitlines())}


def test_the_canvas_zip_is_collected_by_roster_id_and_the_stranger_is_listed(day):
    root, first, _ = day
    rows = grades(root)
    assert set(rows) == {"ada", "grace", "eve", "alan"}
    assert all(row["status"] == "graded" for row in rows.values())
    assert "mallorymal_1999_70009" in first.stdout and "not on the roster" in first.stdout


def test_the_late_submission_is_flagged_and_penalised_and_the_extension_holds(day):
    root, first, _ = day
    rows = grades(root)
    assert rows["eve"]["late"].startswith("late 1 d 0 h, marked late by the LMS (-")
    assert rows["grace"]["late"] == "" and rows["ada"]["late"] == "" and rows["alan"]["late"] == ""
    canvas = list(csv.reader((grades_dir(root) / f"{LESSON}-canvas.csv").read_text().splitlines()))
    by_login = {row[3]: row for row in canvas[2:]}
    raw = float(rows["eve"]["total"])
    assert raw > 0 and float(by_login["eve"][5]) == pytest.approx(raw * 0.9)  # one started day: 10 %
    assert by_login["ada"][:5] == ["Ada Lovelace", "1001", "", "ada", "A"]
    assert re.search(r"    eve \(Eve Moneypenny\): [\d.]+/15\n      .*\n(      .*\n)*      late 1 d 0 h",
                     first.stdout), first.stdout


def test_the_overview_and_the_canvas_csv_are_written_and_summarised(day):
    root, first, _ = day
    page = (grades_dir(root) / f"{LESSON}-overview.html").read_text()
    assert all(grade_id in page for grade_id in ("test_split_heads", STRICTER)) and "alan" in page
    assert "per exercise (4 graded)" in first.stdout, first.stdout
    assert "4 x NotImplementedError" not in first.stdout and "NotImplementedError" in first.stdout, first.stdout
    canvas = list(csv.reader((grades_dir(root) / f"{LESSON}-canvas.csv").read_text().splitlines()))
    assert canvas[0][:6] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LESSON]
    assert canvas[1][0] == "Points Possible"


def test_the_similarity_report_finds_the_planted_copy_and_no_honest_pair(day):
    root, first, _ = day
    page = (grades_dir(root) / f"{LESSON}-similarity.html").read_text()
    assert re.findall(r"<h2>(\w+) and (\w+):", page) == [("eve", "grace")]
    assert "similar answers           1 pairs" in first.stdout


def test_the_log_holds_one_line_per_submission(day):
    root, _, _ = day
    log = (root / GRADING_LOGS / f"{LESSON}.log").read_text()
    lines = [line.split("\t") for line in log.splitlines() if re.match(r"\d{4}-\d\d-\d\dT[\d:]+Z\t", line)]
    assert sorted(fields[1] for fields in lines) == sorted(["ada", "grace", "eve", "alan"] * 2)  # two batches
    assert all(fields[2] == LESSON and fields[4].startswith("graded") and float(fields[5]) > 0 for fields in lines)


def test_the_regrade_prints_every_changed_score_and_only_those(day):
    _, _, second = day
    table = second.stdout[second.stdout.index("  changed since the last run"):]
    assert table.startswith("  changed since the last run   3 of 4 students")
    changed = set(re.findall(r"^    (\w+) \([^)]*\)\s+(\w+)", table, re.MULTILINE))  # id (name)  what
    assert {(s, STRICTER) for s in ("ada", "grace", "eve")} <= changed
    assert {(s, "final") for s in ("ada", "grace", "eve")} <= changed
    assert not any(student == "alan" for student, _ in changed)
    assert re.search(rf"ada \(Ada Lovelace\)\s+{STRICTER}\s+2\s+0\s+grading", table), table
