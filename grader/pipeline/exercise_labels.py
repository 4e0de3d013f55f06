"""Feedback step: each exercise named on the page as the lesson names it ("Exercise 3a"), read from the release.

A submission's markdown is the student's to edit, so the labels never come from the notebook being
graded: `ExerciseLabels` reads the lesson's released notebook (nbgrader's release folder, or its
source folder where no release is left) and puts `grader.cell_roles.cell_labels` of it into the
resources, where the feedback template (grader/pipeline/feedback_template) finds them under
`course_exercise_labels`. Without either notebook the page falls back to the exporter's numbering.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from grader import cell_roles
from grader.safe_text import for_terminal

RESOURCE = "course_exercise_labels"  # the key the feedback template reads


class ExerciseLabels(NbGraderPreprocessor):
    """Feedback step: the lesson's own exercise labels, from its release, into resources[RESOURCE]."""

    def preprocess(self, nb, resources):
        grading = resources.get("nbgrader", {})
        path = self.lesson_notebook(str(grading.get("assignment", "")), str(grading.get("notebook", "")))
        if path is None:
            self.log.warning("No release or source notebook of %s: exercises are numbered in order",
                             for_terminal(grading.get("assignment")))
            resources[RESOURCE] = {}
        else:
            resources[RESOURCE] = cell_roles.cell_labels(nbformat.read(path, as_version=4))
        return nb, resources

    def lesson_notebook(self, assignment: str, name: str) -> Path | None:
        """The released notebook `name` of `assignment`, else its source notebook, else None."""
        if not assignment or not name:
            return None
        coursedir = CourseDirectory(config=self.config)
        for folder in (coursedir.release_directory, coursedir.source_directory):
            path = Path(coursedir.format_path(folder, ".", assignment)) / f"{name}.ipynb"
            if path.is_file():
                return path
        return None
