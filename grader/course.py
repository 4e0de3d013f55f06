"""The course's places, lesson ids and nbgrader configuration, as the instructor's code imports them.

Every name here is defined once, in grader.student.layout (which the student distribution ships
too) and only re-exported: the course root is `ROOT` everywhere. The rest has modules of its own:
grader.extras (optional extras), grader.layout (where a course's release and grading state are)
and grader.gradebook (nbgrader's API over the gradebook).
"""

from __future__ import annotations

from grader.student.layout import (  # noqa: F401 (re-exported: the one definition is there)
    LESSONS,
    ROOT,
    SOLUTIONS,
    checks_file,
    lesson_ids,
    nbgrader_config,
    reference_notebook,
    select_lessons,
    source_text,
    student_notebook,
)
