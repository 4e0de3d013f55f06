"""grader.grading.intake.enrolment: a batch's students are added once, even while another process adds them too."""

from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry

from grader.grading.intake.enrolment import enrol


def test_a_student_added_by_another_process_meanwhile_is_not_an_error(gradebook_url, monkeypatch):
    url = gradebook_url
    look = Gradebook.find_student

    def another_process_adds_it_first(self, student_id):
        if student_id == "ada" and not raced:
            raced.append(student_id)
            with Gradebook(url) as other:  # between nbgrader's look and its insert
                other.add_student("ada")
            raise MissingEntry
        return look(self, student_id)

    raced: list[str] = []
    monkeypatch.setattr(Gradebook, "find_student", another_process_adds_it_first)
    with Gradebook(url) as gradebook:
        enrol(gradebook, ["ada", "grace"])
    assert raced == ["ada"]
    with Gradebook(url) as gradebook:
        assert sorted(s.id for s in gradebook.students) == ["ada", "grace"]


def test_enrolling_again_keeps_one_row_per_student(gradebook_url):
    url = gradebook_url
    for students in (["ada"], ["ada", "grace"]):
        with Gradebook(url) as gradebook:
            enrol(gradebook, students)
    with Gradebook(url) as gradebook:
        assert sorted(s.id for s in gradebook.students) == ["ada", "grace"]


def test_names_and_emails_reach_the_gradebook(gradebook_url):
    with Gradebook(gradebook_url) as gradebook:
        enrol(gradebook, ["canvas_1001", "ada"], {"canvas_1001": ("Ada King Lovelace", "ada@uni.example")})
    with Gradebook(gradebook_url) as gradebook:
        ada = gradebook.find_student("canvas_1001")
        assert (ada.first_name, ada.last_name, ada.email) == ("Ada King", "Lovelace", "ada@uni.example")
        assert gradebook.find_student("ada").last_name is None
