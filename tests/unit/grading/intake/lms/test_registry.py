"""grader.grading.intake.lms.registry: every LMS in one list; one format per download, decided from every
file; identity only from what the LMS wrote."""

from __future__ import annotations

import pytest

from grader.errors import BadDownload
from grader.grading.intake.lms import registry
from grader.grading.intake.lms.canvas import Canvas
from grader.grading.intake.lms.moodle import Moodle
from grader.student.submission_names import submission_filename

LESSON = "03-parallel-heads"
CANVAS = ["lovelaceada_1001_50001_03-parallel-heads.ipynb", "hoppergrace_LATE_1002_50002_03-parallel-heads-1.ipynb",
          "李雷_1003_50003_my work.ipynb", "lovelaceada_1001_50001_notes.pdf"]
MOODLE_FOLDERS = ["Ada Lovelace_88001_assignsubmission_file_/03-parallel-heads.ipynb",
                  "Grace Hopper_88002_assignsubmission_file_/sub/folder/notebook.ipynb",
                  "Grace Hopper_88002_assignsubmission_onlinetext_onlinetext.html"]


def test_every_lms_has_a_name_a_title_and_its_own_module():
    names = [lms.name for lms in registry.lmss()]
    assert names == ["canvas", "moodle", "blackboard", "make-submit"] and len(set(names)) == len(names)
    assert [lms.name for lms in registry.importers()] == ["canvas", "moodle", "blackboard"]
    assert sorted({kind.__module__ for kind in registry.LMSS}) == sorted(
        f"grader.grading.intake.lms.{m}" for m in ("blackboard", "canvas", "make_submit", "moodle"))
    kinds = [form.kind for form, _ in registry.roster_formats()]
    assert kinds == ["canvas", "moodle-worksheet", "moodle-export", "blackboard"]


def test_each_format_reads_who_and_when_from_the_lms_part_only():
    fmt, found = registry.decide(CANVAS)
    grace = found[CANVAS[1]]
    assert fmt == "canvas" and (grace.name, grace.lms_id, grace.late, grace.file_id) == (
        "hoppergrace", "1002", True, "03-parallel-heads-1.ipynb")
    fmt, found = registry.decide(MOODLE_FOLDERS)
    assert fmt == "moodle" and {m.key for m in found.values()} == {"lms:88001", "lms:88002"}
    name = submission_filename(LESSON, "Ada", "20261129-140500")
    fmt, found = registry.decide([name], LESSON)
    assert fmt == "make-submit" and found[name].key == "submit:ada"


def test_a_file_whose_own_name_mimics_moodle_is_still_its_canvas_senders():
    # The attack: Canvas's entry for student 1004 reads, as a whole, like Moodle's name for participant 1002.
    attack = "turingalan_1004_70004_x_1002_assignsubmission_file_03-parallel-heads.ipynb"
    assert Moodle().read_download({attack: None})[attack].lms_id == "1002"  # what trying Moodle first read
    fmt, found = registry.decide([*CANVAS[:2], attack])
    assert fmt == "canvas" and found[attack].lms_id == "1004"


def test_a_late_mark_survives_a_student_file_name_that_fits_another_format():
    late = "hoppergrace_LATE_1002_70002_x_1009_assignsubmission_file_03-parallel-heads.ipynb"
    fmt, found = registry.decide([CANVAS[0], late])
    assert fmt == "canvas" and found[late].late and found[late].lms_id == "1002"


def test_uploaded_make_submit_files_in_a_moodle_download_are_moodles():
    inside = [f"Ada Lovelace_88001_assignsubmission_file_/{submission_filename(LESSON, 'eve', '20261201-000000')}"]
    assert registry.decide(inside, LESSON)[0] == "moodle"  # make-submit fits too, but gives way to an LMS


def test_a_mixed_download_is_refused_with_every_misfit_and_an_ambiguous_one_needs_a_format():
    with pytest.raises(BadDownload, match=r"(?s)2 of 3 files are named as canvas.*homework\.ipynb.*Nothing was"):
        registry.decide([*CANVAS[:2], "homework.ipynb"])
    both = ["ada_1001_50001_x_1002_assignsubmission_file_y.ipynb"]
    with pytest.raises(BadDownload, match=r"more than one format \(canvas, moodle\)"):
        registry.decide(both)
    assert registry.decide(both, forced="moodle")[1][both[0]].lms_id == "1002"
    with pytest.raises(BadDownload, match="unknown download format 'sakai': one of canvas, moodle, blackboard"):
        registry.decide(both, forced="sakai")


def test_misfits_are_shown_inert():
    with pytest.raises(BadDownload) as refused:
        registry.decide([CANVAS[0], "evil\x1b]0;owned\x07.ipynb"])
    assert "\x1b" not in str(refused.value) and "\\x1b" in str(refused.value)


def test_get_finds_an_lms_by_name_with_the_configuration():
    assert isinstance(registry.get("canvas"), Canvas) and registry.get("sakai") is None
