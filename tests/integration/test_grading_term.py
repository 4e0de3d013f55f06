"""A grading term on one lesson, run after run, as an instructor lives it; every output checked row by row.

The steps: a Canvas download graded with Canvas's own gradebook export as the roster; a run without
the roster; a deadline set; an extension granted; a submission edited by hand (and the same
download brought again); a resubmission; a new roster (one student added, one removed, one
renamed); a download with a damaged entry; a manual override. After each step the grades CSV and
the Canvas CSV must hold exactly the rows the facts so far give, and only the steps that change a
submission may start a kernel. `make test-all` adds the same facts applied in one run, and in other
orders: each must give the same files byte for byte.

One file of the first download is an attack: a student who names their upload
`x_1002_assignsubmission_file_<lesson>.ipynb`, so that Canvas's entry also reads as Moodle's name for
participant 1002, a classmate. The download is Canvas's as a whole, so the file is its sender's.

`make test-all` also checks a Blackboard term's first run the same way (one more LMS: make test's is
Canvas's): its Assignment File Download (receipts and attached files, one of them named as Blackboard
names a classmate's later attempt) with its Grade Centre export as the roster, the times read from the
receipts in the server's zone. Blackboard's names, roster and import file are make test's in
tests/unit/grading/intake/lms/test_blackboard.py.
"""

from __future__ import annotations

import csv
import io
import shutil
import struct
import zipfile
from concurrent.futures import Executor, Future
from pathlib import Path

import nbformat
import pytest

from grader.grading import autograde
from grader.grading.policy import overrides
from grader.layout import GRADEBOOK, GRADES, SUBMITTED
from tests.support import COUNT_SANDBOXED_KERNELS, Course, Variant, blackboard_attempt, build, mistake

LESSON = "01-single-head"
HEADER = "student,name,test_softmax,test_attention,total,late,penalty,final,status,notes"
CANVAS_HEADER = "Student,ID,SIS User ID,SIS Login ID,Section,01-single-head (5501)\nPoints Possible,,,,,7"
DEADLINE = f"c.LatePolicy.deadlines = {{{LESSON!r}: '2026-12-01 12:00:00 UTC'}}\n"
EXTENSION = f"c.LatePolicy.extensions = {{{LESSON!r}: {{'canvas_1002': 48}}}}\n"
# Canvas's gradebook export: its assignment column, the lesson's name and Canvas's id, heads the import CSV's.
ROSTER_1 = ('Student,ID,SIS User ID,SIS Login ID,Section,01-single-head (5501)\n'
            '    Points Possible,,,,,7\n'
            '"Lovelace, Ada",1001,S1,ada,A,\n"Hopper, Grace",1002,S2,grace,A,\n'
            '"Moneypenny, Eve",1003,S3,eve,B,\n"Turing, Alan",1004,S4,alan,B,\n')
ROSTER_2 = ('Student,ID,SIS User ID,SIS Login ID,Section,01-single-head (5501)\n'
            '    Points Possible,,,,,7\n'
            '"Lovelace, Ada",1001,S1,ada,A,\n"Hopper, Grace B.",1002,S2,grace,A,\n'
            '"Turing, Alan",1004,S4,alan,B,\n"Smith, Sam",1005,S5,sam,B,\n')
# The downloads: (entry name, time Canvas gives it, what was handed in); a None is a damaged entry.
D1 = [("lovelaceada_1001_70001_01-single-head.ipynb", (2026, 11, 30, 10, 0, 0), "reference"),
      ("hoppergrace_1002_70002_01-single-head.ipynb", (2026, 12, 2, 9, 0, 0), "mistake"),
      ("turingalan_1004_70004_x_1002_assignsubmission_file_01-single-head.ipynb", (2026, 11, 30, 11, 0, 0),
       "untouched")]
D2 = [("lovelaceada_1001_70011_01-single-head-1.ipynb", (2026, 12, 1, 8, 0, 0), "mistake")]
D3 = [("smithsam_1005_70005_01-single-head.ipynb", (2026, 11, 30, 9, 0, 0), "reference"),
      ("hoppergrace_LATE_1002_70012_01-single-head.ipynb", (2026, 12, 3, 9, 0, 0), None)]


class Inline(Executor):
    """Runs each job in the calling process: the course's worker, without the grading processes' start-up."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 (handed to the caller through the future)
            future.set_exception(error)
        return future


class Term:
    """A copy of the shared course with Lesson 1 released, whose policy and facts a test changes step by step."""

    def __init__(self, root: Path, course: Course):
        self.root = root
        (root / "lessons").mkdir(parents=True)
        shutil.copytree(course.lessons / LESSON, root / "lessons" / LESSON)
        course.copy_gradebook(root / GRADEBOOK)
        self.base = (course.root / "nbgrader_config.py").read_text().replace(str(course.root), str(root))
        self.policy = ""
        self.configure()
        release = root / "lessons" / LESSON / f"{LESSON}.ipynb"
        self.notebooks = {"reference": build(LESSON, release, Variant("reference")),
                          "mistake": build(LESSON, release, mistake(LESSON)),
                          "untouched": build(LESSON, release, Variant("untouched", untouched=True))}
        self.kernels = 0

    def configure(self, *lines: str) -> None:
        self.policy += "".join(lines)
        (self.root / "nbgrader_config.py").write_text(self.base + COUNT_SANDBOXED_KERNELS + self.policy)

    def download(self, name: str, entries) -> Path:
        archive = self.root / f"{name}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as handle:
            for entry, when, what in entries:
                content = nbformat.writes(self.notebooks[what or "reference"])
                handle.writestr(zipfile.ZipInfo(entry, date_time=when), content)
        for entry, _, what in entries:
            if what is None:
                damage(archive, entry)
        return archive

    def roster(self, text: str) -> Path:
        path = self.root / f"roster-{len(text)}.csv"
        path.write_text(text)
        return path

    def run(self, **options) -> tuple[str, autograde.Batch]:
        out = io.StringIO()
        batch = autograde.main(lesson=LESSON, course=self.root, executor=Inline(), out=out, progress=io.StringIO(),
                               **options)
        self.kernels = sum(not r.cached for r in batch.results)
        return out.getvalue(), batch

    def grades(self) -> list[str]:
        return (self.root / GRADES / f"{LESSON}.csv").read_text().splitlines()

    def canvas(self) -> list[str]:
        return (self.root / GRADES / f"{LESSON}-canvas.csv").read_text().splitlines()

    def outputs(self) -> dict[str, bytes]:
        folder = self.root / GRADES
        return {name: (folder / name).read_bytes() for name in
                (f"{LESSON}.csv", f"{LESSON}-canvas.csv")}

    def submitted(self, student: str) -> Path:
        return self.root / SUBMITTED / student / LESSON / f"{LESSON}.ipynb"


def damage(archive: Path, entry: str) -> None:
    """Flip a byte in the middle of `entry`'s stored data, so that reading it fails its CRC check."""
    with zipfile.ZipFile(archive) as handle:
        info = handle.getinfo(entry)
    data = bytearray(archive.read_bytes())
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_length + extra_length
    data[start + info.compress_size // 2] ^= 0xFF
    archive.write_bytes(bytes(data))


@pytest.fixture
def term(tmp_path, course) -> Term:
    return Term(tmp_path / "term course", course)


def test_a_term_of_reruns_keeps_every_row_right(term):
    # 1. A Canvas download with Canvas's gradebook export as the roster.
    text, _ = term.run(source=term.download("d1", D1), roster=term.roster(ROSTER_1))
    assert term.kernels == 3
    assert "download format: canvas" in text
    assert "added to the roster: canvas_1001, canvas_1002, canvas_1003, canvas_1004" in text
    ada, grace = 'canvas_1001,"Lovelace, Ada",3,4,7,,,7,graded,', 'canvas_1002,"Hopper, Grace",0,4,4,,,4,graded,'
    eve, alan = 'canvas_1003,"Moneypenny, Eve",,,,,,,no submission,', 'canvas_1004,"Turing, Alan",0,0,0,,,0,graded,'
    assert term.grades() == [HEADER, ada, grace, eve, alan]
    first_canvas = [*CANVAS_HEADER.splitlines(),
                    '"Lovelace, Ada",1001,S1,ada,A,7',
                    '"Hopper, Grace",1002,S2,grace,A,4',
                    '"Moneypenny, Eve",1003,S3,eve,B,',
                    '"Turing, Alan",1004,S4,alan,B,0']
    assert term.canvas() == first_canvas
    # Nothing new for Canvas: the import CSV's columns are exactly the export's, and no Moodle file beside it.
    assert term.canvas()[0] == ROSTER_1.splitlines()[0]
    assert not (term.root / GRADES / f"{LESSON}-moodle.csv").exists()
    assert f"(none: this is the first run of {LESSON}, 4 students)" in text and "WARNING" not in text
    assert "feedback zip: " in text

    # 2. A run without the roster: the roster is remembered, nobody gets a second id, nothing reruns.
    text, _ = term.run()
    assert term.kernels == 0 and term.grades() == [HEADER, ada, grace, eve, alan] and term.canvas() == first_canvas
    assert "changed since the last run   none (4 students)" in text

    # 3. A deadline set: the late student loses 10 % of her points for a started day, without a kernel.
    term.configure(DEADLINE)
    text, _ = term.run()
    assert term.kernels == 0
    assert term.grades() == [HEADER, ada, 'canvas_1002,"Hopper, Grace",0,4,4,late 21 h 0 min (-0.4 points),0.4,3.6,'
                                          'graded,', eve, alan]
    assert term.canvas()[3] == '"Hopper, Grace",1002,S2,grace,A,3.6'
    assert "canvas_1002 (Hopper, Grace)  final  4       3.6    late policy: late 21 h 0 min (-0.4 points)" in text

    # 4. An extension of 48 hours: on time again.
    term.configure(EXTENSION)
    text, _ = term.run()
    assert term.kernels == 0 and term.grades() == [HEADER, ada, grace, eve, alan] and term.canvas() == first_canvas
    assert "canvas_1002 (Hopper, Grace)  final  3.6     4      late policy: on time" in text

    # 5. A hand edit of a stored submission: graded again, and kept when the same download comes again.
    nbformat.write(term.notebooks["reference"], term.submitted("canvas_1004"))
    term.run()
    assert term.kernels == 1
    alan = 'canvas_1004,"Turing, Alan",3,4,7,,,7,graded,graded as edited by hand'
    assert term.grades() == [HEADER, ada, grace, eve, alan]
    text, _ = term.run(source=term.download("d1", D1))
    assert term.kernels == 0 and term.grades() == [HEADER, ada, grace, eve, alan]
    assert f"canvas_1004/{LESSON}: kept as edited by hand" in text

    # 6. A resubmission: the later attempt is graded, the earlier one noted.
    text, _ = term.run(source=term.download("d2", D2))
    assert term.kernels == 1
    ada = 'canvas_1001,"Lovelace, Ada",0,4,4,,,4,graded,'
    assert term.grades() == [HEADER, ada, grace, eve, alan]
    assert "lovelaceada_1001_70001_01-single-head.ipynb: an older attempt of canvas_1001" in text

    # 7. A new roster: Sam added, Eve removed (her row goes), Grace renamed; ids never change.
    text, _ = term.run(roster=term.roster(ROSTER_2))
    assert "added to the roster: canvas_1005" in text
    assert "removed from the roster (their work stays): canvas_1003" in text
    assert "renamed: canvas_1002: 'Hopper, Grace' -> 'Hopper, Grace B.'" in text
    grace, sam = 'canvas_1002,"Hopper, Grace B.",0,4,4,,,4,graded,', 'canvas_1005,"Smith, Sam",,,,,,,no submission,'
    assert term.grades() == [HEADER, ada, grace, alan, sam]

    # 8. A download with a damaged entry: that file is listed, the rest is graded.
    text, _ = term.run(source=term.download("d3", D3))
    assert term.kernels == 1
    assert "hoppergrace_LATE_1002_70012_01-single-head.ipynb: could not be read (BadZipFile" in text
    sam = 'canvas_1005,"Smith, Sam",3,4,7,,,7,graded,'
    assert term.grades() == [HEADER, ada, grace, alan, sam]

    # 9. A manual override survives every rerun, and a regrade.
    overrides.main(lesson=LESSON, student="canvas_1005", exercise="test_attention", points=2,
                   reason="copied the attention from a classmate", course=term.root)
    term.run()
    sam = 'canvas_1005,"Smith, Sam",3,2,5,,,5,graded,override test_attention: 2 (copied the attention from a classmate)'
    assert term.grades() == [HEADER, ada, grace, alan, sam]
    term.run(regrade=True)
    assert term.kernels == 4 and term.grades() == [HEADER, ada, grace, alan, sam]
    assert term.canvas()[2:] == ['"Lovelace, Ada",1001,S1,ada,A,4', '"Hopper, Grace B.",1002,S2,grace,A,4',
                                 '"Turing, Alan",1004,S4,alan,B,7', '"Smith, Sam",1005,S5,sam,B,5']

    # 10. A column configured by hand wins, and is warned about when the export has no such assignment.
    term.configure(f"c.CanvasImport.columns = {{{LESSON!r}: 'Lesson 1 (9999)'}}\n")
    text, _ = term.run()
    assert term.kernels == 0 and term.canvas()[0] == "Student,ID,SIS User ID,SIS Login ID,Section,Lesson 1 (9999)"
    assert ("WARNING: the Canvas import CSV's column 'Lesson 1 (9999)' is no assignment of the Canvas gradebook "
            "export given as the roster") in text and "the export's assignments: 01-single-head (5501)" in text


# Blackboard's Grade Centre export: its column for the lesson, whose id after "|" its upload matches.
BLACKBOARD_ROSTER = ('"Last Name","First Name","Username","Student ID","Last Access","Availability",'
                     '"01-single-head [Total Pts: 7 Score] |5501"\n'
                     '"Lovelace","Ada","ada","S1","","Yes",""\n"Hopper","Grace","grace","S2","","Yes",""\n'
                     '"Moneypenny","Eve","eve","S3","","Yes",""\n"Turing","Alan","alan","S4","","Yes",""\n')
# Attempts (username, name, the server's local time in Amsterdam, what was handed in, the student's file name).
# Alan names his upload as Blackboard names a later attempt of Grace's.
BLACKBOARD_ATTEMPTS = [
    ("ada", "Ada Lovelace", (2026, 11, 30, 11, 0, 0), "reference", f"{LESSON}.ipynb"),
    ("grace", "Grace Hopper", (2026, 12, 2, 10, 0, 0), "mistake", f"{LESSON}.ipynb"),
    ("alan", "Alan Turing", (2026, 11, 30, 12, 0, 0), "untouched",
     f"Lesson_1_grace_attempt_2026-12-03-10-00-00_{LESSON}.ipynb")]


@pytest.mark.more_cases
def test_a_blackboard_download_is_graded_by_username_and_receipt_time_into_the_grade_centre_file(term):
    term.configure(DEADLINE, "c.BlackboardDownload.time_zone = 'Europe/Amsterdam'\n")
    archive = term.root / "gradebook_Lesson_1.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for username, name, when, what, own in BLACKBOARD_ATTEMPTS:
            entries = blackboard_attempt("Lesson 1", username, name, when,
                                         {own: nbformat.writes(term.notebooks[what])}, zone="CET")
            for entry, content in entries.items():  # the zip's own times are a day after the deadline: not read
                handle.writestr(zipfile.ZipInfo(entry, date_time=(2026, 12, 2, 12, 0, 0)), content)
    text, _ = term.run(source=archive, roster=term.roster(BLACKBOARD_ROSTER))
    assert term.kernels == 3 and "download format: blackboard" in text and "WARNING" not in text
    assert "not collected (files)    0" in text
    assert term.grades() == [HEADER,
                             'blackboard_ada,"Lovelace, Ada",3,4,7,,,7,graded,',
                             'blackboard_alan,"Turing, Alan",0,0,0,,,0,graded,',
                             'blackboard_eve,"Moneypenny, Eve",,,,,,,no submission,',
                             'blackboard_grace,"Hopper, Grace",0,4,4,late 21 h 0 min (-0.4 points),0.4,3.6,graded,']
    assert (term.root / GRADES / f"{LESSON}-blackboard.csv").read_text().splitlines() == [
        '"Last Name","First Name","Username","Student ID","01-single-head [Total Pts: 7 Score] |5501"',
        '"Lovelace","Ada","ada","S1","7"',
        '"Turing","Alan","alan","S4","0"',
        '"Moneypenny","Eve","eve","S3",""',
        '"Hopper","Grace","grace","S2","3.6"']
    assert not (term.root / GRADES / f"{LESSON}-canvas.csv").exists()
    assert not (term.root / GRADES / f"{LESSON}-moodle.csv").exists()
    with zipfile.ZipFile(term.root / GRADES / f"{LESSON}-feedback.zip") as bundle:
        assert sorted(bundle.namelist()) == [f"{u}_{LESSON}-feedback.html" for u in ("ada", "alan", "grace")]
    # Reruns over the same facts (the same download handed in again, then no new input) change no file.
    def files() -> dict[str, bytes]:
        names = (f"{LESSON}.csv", f"{LESSON}-blackboard.csv")
        return {name: (term.root / GRADES / name).read_bytes() for name in names}

    first = files()
    term.run(source=archive, roster=term.roster(BLACKBOARD_ROSTER))
    term.run()
    assert files() == first


@pytest.mark.more_cases
def test_the_same_facts_in_one_run_or_in_another_order_give_the_same_files(tmp_path, course):
    def finish(term: Term) -> dict[str, bytes]:
        overrides.main(lesson=LESSON, student="canvas_1005", exercise="test_attention", points=2,
                       reason="copied", course=term.root)
        term.run()
        nbformat.write(term.notebooks["reference"], term.submitted("canvas_1004"))
        term.run()
        return term.outputs()

    # In one run: every download at once, the last roster, the final policy.
    single = Term(tmp_path / "single", course)
    single.configure(DEADLINE, EXTENSION)
    single.run(source=single.download("all", D1 + D2 + D3), roster=single.roster(ROSTER_2))
    expected = finish(single)
    # Downloads newest first, the roster last, the policy before anything.
    shuffled = Term(tmp_path / "shuffled", course)
    shuffled.configure(EXTENSION, DEADLINE)
    shuffled.run(source=shuffled.download("d3", D3), roster=shuffled.roster(ROSTER_2))
    shuffled.run(source=shuffled.download("d2", D2))
    shuffled.run(source=shuffled.download("d1", D1))
    assert finish(shuffled) == expected
    # No roster at first: ids from the downloads, the same ones the roster gives.
    late_roster = Term(tmp_path / "late roster", course)
    late_roster.run(source=late_roster.download("d1", D1))
    late_roster.run(source=late_roster.download("d2", D2))
    late_roster.configure(DEADLINE, EXTENSION)
    late_roster.run(roster=late_roster.roster(ROSTER_2))
    late_roster.run(source=late_roster.download("d3", D3))
    assert finish(late_roster) == expected
    rows = list(csv.reader(expected[f"{LESSON}.csv"].decode().splitlines()))
    assert [r[0] for r in rows[1:]] == ["canvas_1001", "canvas_1002", "canvas_1004", "canvas_1005"]
