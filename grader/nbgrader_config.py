"""nbgrader configuration for the course, loaded by ../nbgrader_config.py.

nbgrader's own folders are mapped onto the course layout instead of renaming the course:
solutions/<lesson>/ is nbgrader's source, lessons/<lesson>/ its release. Everything grading
produces (submissions, autograded copies, feedback, the gradebook with the hidden tests) lives
in grader/state/, which git ignores.
"""

import sys
from pathlib import Path

from nbgrader.converters import GenerateAssignment

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
repo = Path(__file__).resolve().parent.parent
if str(repo) not in sys.path:  # so nbgrader can import the course's own preprocessors
    sys.path.insert(0, str(repo))

(repo / "grader" / "state").mkdir(exist_ok=True)  # SQLite cannot create the gradebook otherwise
c.CourseDirectory.root = str(repo)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "lessons"
c.CourseDirectory.submitted_directory = "grader/state/submitted"
c.CourseDirectory.autograded_directory = "grader/state/autograded"
c.CourseDirectory.feedback_directory = "grader/state/feedback"
# timeout= lets parallel graders wait for SQLite's write lock instead of failing with
# "database is locked".
c.CourseDirectory.db_url = f"sqlite:///{repo}/grader/state/gradebook.db?timeout=60"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Releasing: nbgrader's pipeline, then drop the jupytext pairing from the student copy.
c.GenerateAssignment.preprocessors = [
    *GenerateAssignment.class_traits()["preprocessors"].default(),
    "grader.preprocessors.StripPairingMetadata",
]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Grading: a locked test cell that a student deleted is put back and run, not silently skipped.
c.OverwriteCells.add_missing_cells = True
# Per-cell time limit when autograding; an infinite loop costs this once per cell that hits it.
c.Execute.timeout = 30
