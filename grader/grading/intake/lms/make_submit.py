"""The course's own `make submit` files, gathered by the instructor into a folder: no LMS, no roster, no import.

Each is named `<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb` (grader.student.submission_names):
the one format whose name says who and when, so it is used only when the whole download is such files
and no LMS's format fits them all (`fallback`; a Moodle folder of uploaded `make submit` files is
Moodle's). The id is the name's, normalised (or, typed in another script, made readable and unique:
grader.grading.intake.ids.script_id); the time is the name's, in UTC. A file of another lesson, or
with an id that breaks the rule for ids, is no submission of the lesson.
"""

from __future__ import annotations

from datetime import UTC, datetime

from grader.grading.intake.ids import ID_RULE, normalised_id, script_id
from grader.grading.intake.lms.base import Match, NamedFiles
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT


class MakeSubmit(NamedFiles):
    name = "make-submit"
    title = "make submit"
    order = 90
    fallback = True
    pattern = r"(?:.*/)?" + SUBMISSION_REGEXP

    def read_name(self, groups: dict[str, str], path: str, lesson: str) -> Match | None:
        try:
            when = datetime.strptime(groups["timestamp"], SUBMISSION_TIME_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            return None
        student = groups["student_id"]
        ident = normalised_id(student) or script_id(student)
        named = path.rsplit("/", 1)[-1].split("_", 1)[0]
        problem = f"a submission for {named}, not {lesson}" if lesson and (
            named != lesson or groups["file_id"] != f"{lesson}.ipynb") else ""
        if not problem and normalised_id(student) is None and student.isascii():
            problem = f"the student id must be {ID_RULE}"
        return Match(self.name, f"submit:{ident}", ident, groups["file_id"], student_id=student, timestamp=when,
                     upload_prefix=f"{student}_", problem=problem)
