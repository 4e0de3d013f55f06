"""grader.grading.intake.lms.blackboard: Blackboard's Assignment File Download (receipts and attached files),
its Grade Centre export, its ids and the Grade Centre upload file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from traitlets.config import Config

from grader.errors import BadDownload
from grader.grading.intake.lms import blackboard, registry
from grader.grading.intake.lms.blackboard import Blackboard, read_receipt, receipt_time
from grader.grading.intake.roster import Roster, Student
from grader.grading.running.jobs import Result
from grader.student.submission_names import submission_filename
from tests.support import blackboard_attempt, grade_rows, lms_import

LESSON = "03-parallel-heads"
POINTS = {"test_a": 3.0, "test_b": 4.0}
ADA = blackboard_attempt("Lesson 3", "alovelace", "Ada Lovelace", (2026, 11, 30, 10, 0, 0),
                         {f"{LESSON}.ipynb": "ada's", "notes.pdf": "pdf"})
GRACE = blackboard_attempt("Lesson 3", "g_hopper", "Grace Hopper", (2026, 12, 2, 9, 30, 5), {"my work.ipynb": "g"})
EXPORT = ('"Last Name","First Name","Username","Student ID","Last Access","Availability",'
          '"Lesson 3 [Total Pts: 7 Score] |5503","Total [Total Pts: up to 7 Score] |5500"\n'
          '"Lovelace","Ada","alovelace","S1","2026-12-01","Available","",""\n'
          '"Hopper","Grace","g_hopper","S2","2026-12-01","Available","",""\n')


def opened(entries: dict[str, object]):
    return {name: (lambda content=content: content.encode() if isinstance(content, str) else content)
            for name, content in entries.items()}


def test_an_attempts_files_are_its_receipts_username_and_time_and_the_receipt_is_evidence():
    found = Blackboard().read_download(opened({**ADA, **GRACE}))
    assert set(found) == {*ADA, *GRACE}
    receipt = found["Lesson_3_alovelace_attempt_2026-11-30-10-00-00.txt"]
    assert receipt.evidence and receipt.key == "lms:alovelace"
    notebook = found[f"Lesson_3_alovelace_attempt_2026-11-30-10-00-00_{LESSON}.ipynb"]
    assert (notebook.key, notebook.grading_id, notebook.name, notebook.lms_id, notebook.file_id, notebook.late) == (
        "lms:alovelace", "blackboard_alovelace", "Ada Lovelace", "alovelace", f"{LESSON}.ipynb", False)
    assert notebook.timestamp == datetime(2026, 11, 30, 10, 0, tzinfo=UTC) and not notebook.evidence
    assert notebook.upload_prefix == "alovelace_"
    grace = found["Lesson_3_g_hopper_attempt_2026-12-02-09-30-05_my work.ipynb"]  # an underscore in the username
    assert grace.lms_id == "g_hopper" and grace.file_id == "my work.ipynb"
    assert registry.decide(opened({**ADA, **GRACE}))[0] == "blackboard"


def test_every_attached_file_needs_its_receipt_and_its_receipts_listing():
    unlisted = {**ADA, "Lesson_3_alovelace_attempt_2026-11-30-10-00-00_extra.ipynb": "x"}
    orphan = {**ADA, "Lesson_3_bob_attempt_2026-11-30-11-00-00_03-parallel-heads.ipynb": "x"}
    for entries, misfit in [(unlisted, "extra.ipynb"), (orphan, "bob_attempt")]:
        with pytest.raises(BadDownload, match=rf"(?s)the download is not one format.*{misfit}"):
            registry.decide(opened(entries))


def test_a_receipt_with_windows_line_ends_and_a_byte_order_mark_is_read():
    receipt = "Lesson_3_alovelace_attempt_2026-11-30-10-00-00.txt"
    windows = {**ADA, receipt: b"\xef\xbb\xbf" + ADA[receipt].replace("\n", "\r\n").encode()}
    assert set(Blackboard().read_download(opened(windows))) == set(ADA)


def test_a_receipt_whose_username_does_not_end_blackboards_part_of_the_name_is_none():
    wrong = {name.replace("alovelace", "someone"): content for name, content in ADA.items()}
    assert Blackboard().read_download(opened(wrong)) == {}  # the receipt says alovelace, the names someone


def test_the_receipt_is_read_from_its_head_and_its_last_files_list():
    text = ADA["Lesson_3_alovelace_attempt_2026-11-30-10-00-00.txt"]
    receipt = read_receipt(text)
    assert (receipt.name, receipt.username, receipt.submitted) == (
        "Ada Lovelace", "alovelace", "Monday, 30 November 2026 10:00:00 o'clock GMT")
    assert receipt.files == {f"Lesson_3_alovelace_attempt_2026-11-30-10-00-00_{n}" for n in (f"{LESSON}.ipynb",
                                                                                            "notes.pdf")}
    assert read_receipt("Assignment: x\nDate Submitted: y\n") is None and read_receipt("not a receipt") is None
    assert read_receipt(text.replace("Name: Ada Lovelace (alovelace)", "Name: Ada (Countess) Lovelace (ada)")
                        ).username == "ada"  # the last brackets are Blackboard's


@pytest.mark.parametrize(("written", "zone", "expected"), [
    ("Monday, 30 November 2026 10:00:00 o'clock GMT", "UTC", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
    ("Tuesday, 27 November 2018 15:38:53 o'clock CET", "Europe/Amsterdam",
     datetime(2018, 11, 27, 14, 38, 53, tzinfo=UTC)),  # CodeGra.de's test receipt
    ("Tuesday, 2 June 2026 15:38:53 o'clock CEST", "Europe/Amsterdam", datetime(2026, 6, 2, 13, 38, 53, tzinfo=UTC)),
    ("Wednesday, September 24, 2014 10:13:05 PM CDT", "America/Chicago", datetime(2014, 9, 25, 3, 13, 5, tzinfo=UTC)),
    ("Wednesday, September 24, 2014 10:13:05 PM", "America/Chicago", datetime(2014, 9, 25, 3, 13, 5, tzinfo=UTC)),
])
def test_the_receipts_time_is_read_in_the_servers_zone(written, zone, expected):
    assert receipt_time(written, zone) == expected


def test_a_zone_that_is_not_the_configured_ones_or_an_unreadable_time_is_a_problem_of_each_file():
    assert "set it to the Blackboard server's zone" in receipt_time("Tuesday, 27 November 2018 15:38:53 CET", "UTC")
    assert "is no IANA time zone" in receipt_time("Tuesday, 27 November 2018 15:38:53 CET", "Mars/Olympus")
    assert "cannot read" in receipt_time("dinsdag 27 november 2018 15:38:53 CET", "Europe/Amsterdam")
    cet = blackboard_attempt("Lesson 3", "alovelace", "Ada Lovelace", (2026, 11, 30, 10, 0, 0),
                             {f"{LESSON}.ipynb": "a"}, zone="CET")
    found = Blackboard().read_download(opened(cet))
    assert all("c.BlackboardDownload.time_zone 'UTC' is UTC then" in m.problem for m in found.values())
    amsterdam = Blackboard(Config({"BlackboardDownload": {"time_zone": "Europe/Amsterdam"}}))
    assert {m.timestamp for m in amsterdam.read_download(opened(cet)).values()} == {
        datetime(2026, 11, 30, 9, 0, tzinfo=UTC)}


def test_a_download_that_also_reads_as_canvas_needs_a_format():
    # A numeric username and an assignment named "Lesson 3": every name also fits Canvas's pattern.
    numbered = blackboard_attempt("Lesson 3", "20231234", "Ada Lovelace", (2026, 11, 30, 10, 0, 0),
                                  {f"{LESSON}.ipynb": "a"})
    with pytest.raises(BadDownload, match=r"more than one format \(canvas, blackboard\)"):
        registry.decide(opened(numbered))
    fmt, found = registry.decide(opened(numbered), forced="blackboard")
    assert fmt == "blackboard" and {m.lms_id for m in found.values()} == {"20231234"}


def test_make_submit_files_are_not_blackboards():
    name = submission_filename(LESSON, "ada", "20261129-140500")
    assert Blackboard().read_download(opened({name: "x"})) == {}
    assert registry.decide(opened({name: "x"}), LESSON)[0] == "make-submit"


def test_the_grade_centre_export_is_read_with_its_columns():
    roster = Roster.parse(EXPORT)
    assert (roster.kind, roster.lms) == ("blackboard", "blackboard")
    assert roster.assignments == ("Lesson 3 [Total Pts: 7 Score] |5503", "Total [Total Pts: up to 7 Score] |5500")
    assert roster.students[0] == Student("", "Lovelace, Ada", lms_id="alovelace", sis_user_id="S1")


def test_the_upload_file_quotes_every_cell_and_heads_the_exports_column(tmp_path):
    results = [Result("blackboard_alovelace", "graded", scores={"test_a": 3.0, "test_b": 2.5})]
    rows = grade_rows(LESSON, results, POINTS, roster=EXPORT)
    written, warning = lms_import("blackboard", tmp_path / "bb.csv", LESSON, rows, POINTS,
                                  assignments=Roster.parse(EXPORT).assignments)
    assert warning.startswith("WARNING: the Blackboard import CSV's column '03-parallel-heads' is no column of the "
                              "Blackboard Grade Centre export given as the roster (no column of the export is named")
    config = Config({"BlackboardImport": {"columns": {LESSON: "Lesson 3 [Total Pts: 7 Score] |5503"}}})
    written, warning = lms_import("blackboard", tmp_path / "bb.csv", LESSON, rows, POINTS, config=config,
                                  assignments=Roster.parse(EXPORT).assignments)
    assert warning == "" and written == [
        [*blackboard.IDENTITY, "Lesson 3 [Total Pts: 7 Score] |5503"],
        ["Lovelace", "Ada", "alovelace", "S1", "5.5"],
        ["Hopper", "Grace", "g_hopper", "S2", ""]]
    assert (tmp_path / "bb.csv").read_text().splitlines()[1] == '"Lovelace","Ada","alovelace","S1","5.5"'


def test_the_column_named_as_the_lesson_is_found_and_other_lmss_students_are_left_out(tmp_path):
    export = EXPORT.replace("Lesson 3 [", "03-Parallel-Heads [")
    rows = grade_rows(LESSON, [], POINTS, roster=export)
    written, warning = lms_import("blackboard", tmp_path / "bb.csv", LESSON, rows, POINTS,
                                  assignments=Roster.parse(export).assignments)
    assert written[0][-1] == "03-Parallel-Heads [Total Pts: 7 Score] |5503" and warning == ""
    canvas_rows = grade_rows(LESSON, [], POINTS, roster="Student,ID,SIS Login ID\nAda,1001,ada\n")
    assert lms_import("blackboard", tmp_path / "c.csv", LESSON, canvas_rows, POINTS)[0] == [
        [*blackboard.IDENTITY, LESSON]]


def test_the_upload_splits_a_rosters_last_first_or_a_receipts_first_last():
    assert blackboard._last_first("Lovelace, Ada") == ("Lovelace", "Ada")
    assert blackboard._last_first("Anna van der Schip") == ("Schip", "Anna van der")
