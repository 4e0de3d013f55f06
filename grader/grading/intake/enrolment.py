"""Put a batch's students into the gradebook before any of their submissions is graded.

nbgrader's autograde adds a student it does not find, and two processes that grade the same new
student at once (two lessons, or two batches) can both miss and both add: one of them then fails
on the gradebook's unique key. Adding every student first, once, and treating "already there"
as done, leaves the jobs nothing to add. Each student's name and email, where the people registry
knows them, go with it (nbgrader's formgrader shows them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nbgrader.api import Gradebook, InvalidEntry


def enrol(gradebook: Gradebook, students: Iterable[str], names: Mapping[str, tuple[str, str]] | None = None) -> None:
    """Make sure every one of `students` is in the open `gradebook`, even while another process adds the same
    ones; `names` gives some of them (name, email), the last word of the name as the last name."""
    names = names or {}
    for student in students:
        name, email = names.get(student, ("", ""))
        *first, last = name.split() or [""]
        details = {"first_name": " ".join(first) or None, "last_name": last or None, "email": email or None}
        try:
            gradebook.update_or_create_student(student, **details)
        except InvalidEntry:  # another process added it between nbgrader's look and its insert
            gradebook.find_student(student)
