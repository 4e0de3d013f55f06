"""Where a course keeps its release and what grading writes: the folders of its nbgrader configuration.

STATE, STATE_FOLDERS and GRADEBOOK are the course's own choices (grader/nbgrader_config.py sets
them); `Layout.of(config)` reads the folders any configuration gives, a test course's too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

# Everything grading writes, relative to a course's root; git ignores it and it is never published.
STATE = "grader/state"
STATE_FOLDERS = {"submitted": f"{STATE}/submitted", "autograded": f"{STATE}/autograded",
                 "feedback": f"{STATE}/feedback"}
GRADEBOOK = f"{STATE}/gradebook.db"


@dataclass(frozen=True)
class Layout:
    """Where one course keeps its release and what grading writes, as its nbgrader config says."""

    root: Path
    release: Path
    submitted: Path
    autograded: Path
    feedback: Path

    @classmethod
    def of(cls, config: Config) -> Layout:
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=config)

        def folder(step: str) -> Path:
            return Path(coursedir.format_path(step, ".", ".")).resolve()

        return cls(Path(coursedir.root).resolve(), folder(coursedir.release_directory),
                   folder(coursedir.submitted_directory), folder(coursedir.autograded_directory),
                   folder(coursedir.feedback_directory))

    @property
    def state(self) -> Path:
        """The folder that holds submitted/, autograded/, feedback/, grades/, logs/ and the term's facts."""
        return self.autograded.parent

    def release_notebook(self, lesson: str) -> Path:
        return self.release / lesson / f"{lesson}.ipynb"

    def submitted_notebook(self, student: str, lesson: str) -> Path:
        return self.submitted / student / lesson / f"{lesson}.ipynb"

    def autograded_notebook(self, student: str, lesson: str) -> Path:
        return self.autograded / student / lesson / f"{lesson}.ipynb"

    def feedback_page(self, student: str, lesson: str) -> Path:
        return self.feedback / student / lesson / f"{lesson}.html"

    def grades_csv(self, lesson: str) -> Path:
        return self.state / "grades" / f"{lesson}.csv"

    def grades_plot(self, lesson: str) -> Path:
        return self.state / "grades" / f"{lesson}.png"

    def log(self, lesson: str) -> Path:
        return self.state / "logs" / f"{lesson}.log"

    # The term's facts besides the submissions and the gradebook (grader.grading: collect, people, overrides).
    @property
    def attempts(self) -> Path:
        """Every notebook ever downloaded, per lesson and student: `<lesson>/<student>/<sha256>.ipynb`."""
        return self.state / "attempts"

    @property
    def people(self) -> Path:
        """The people registry: each person's id for the term, and the roster last given."""
        return self.state / "people.json"

    @property
    def overrides(self) -> Path:
        return self.state / "overrides.json"

    def grades_snapshot(self, lesson: str) -> Path:
        """The last run's grades, to say what changed since."""
        return self.state / "grades" / f"{lesson}.json"

    def feedback_bundle(self, lesson: str) -> Path:
        """One feedback file per student, named for upload to the LMS, and the same as a .zip beside it."""
        return self.state / "grades" / f"{lesson}-feedback"
