"""Where a course keeps its release and what grading writes: the folders of its nbgrader configuration.

Grading's data lives where nbgrader keeps a course's data, at the course's root (nbgrader's own
defaults): `gradebook.db`, `submitted/`, `autograded/` and `feedback/`; beside them, the course's own
outputs and facts in folders named for what they hold (GRADES, GRADING_LOGS, TERM). Each name is
defined here once; grader/nbgrader_config.py gives nbgrader its four, and `Layout.of(config)` reads
the folders any configuration gives, a test course's too. Git ignores all of it (.gitignore) and
`make dist` never publishes it (its files are an allowlist: grader/authoring/dist.py).

Versions of the course before this layout kept all of it in `grader/state/`, inside the Python
package. `Layout.of` refuses a course that still has data there (OldGradingData), naming what it
found and the command that moves it (`make move-grading-data`, `move_old_data`); nothing is moved
or ignored silently.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

from grader.errors import OldGradingData
from grader.student.layout import student_notebook

# What grading writes, relative to a course's root. nbgrader's four, at nbgrader's default places:
GRADEBOOK = "gradebook.db"  # every hidden test and grade: never publish it
SUBMITTED = "submitted"
AUTOGRADED = "autograded"
FEEDBACK = "feedback"
# The course's own, beside them:
GRADES = "grades"  # per lesson: the grades CSV, plot and snapshot, the LMS import files, the pages, the feedback bundle
GRADING_LOGS = "grading-logs"  # per lesson: one line per graded submission
TERM = "term"  # the term's facts: every attempt downloaded, the people registry, the overrides, the releases made
GRADING_DATA = (GRADEBOOK, SUBMITTED, AUTOGRADED, FEEDBACK, GRADES, GRADING_LOGS, TERM)
# Beside each submitted notebook, as nbgrader's collect writes it and its autograde reads it:
TIMESTAMP = "timestamp.txt"  # when the submission was handed in
SUBMISSION_SECRET = "submission_secret.txt"  # the exchange's secret of a hub submission

# Where versions before this layout kept all of it, and where each of its entries goes now.
OLD_STATE = "grader/state"
OLD_PLACES = {"gradebook.db": GRADEBOOK, "submitted": SUBMITTED, "autograded": AUTOGRADED, "feedback": FEEDBACK,
              "grades": GRADES, "logs": GRADING_LOGS, "attempts": f"{TERM}/attempts",
              "people.json": f"{TERM}/people.json", "overrides.json": f"{TERM}/overrides.json",
              "releases.json": f"{TERM}/releases.json"}
OLD_LEFTOVERS = ("README.md", "hub-exchange")  # the old folder's tracked README; a hub collect's staging, if cut short
MOVE_COMMAND = "make move-grading-data"


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
        """The course's folders; refuses (OldGradingData) a course with grading data still in grader/state/."""
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=config)

        def folder(step: str) -> Path:
            return Path(coursedir.format_path(step, ".", ".")).resolve()

        root = Path(coursedir.root).resolve()
        refuse_old_data(root)
        return cls(root, folder(coursedir.release_directory), folder(coursedir.submitted_directory),
                   folder(coursedir.autograded_directory), folder(coursedir.feedback_directory))

    def release_notebook(self, lesson: str) -> Path:
        return student_notebook(lesson, self.release)  # the release folder is the students' lessons folder

    def submitted_notebook(self, student: str, lesson: str) -> Path:
        return self.submitted / student / lesson / f"{lesson}.ipynb"

    def autograded_notebook(self, student: str, lesson: str) -> Path:
        return self.autograded / student / lesson / f"{lesson}.ipynb"

    def feedback_page(self, student: str, lesson: str) -> Path:
        return self.feedback / student / lesson / f"{lesson}.html"

    @property
    def grades(self) -> Path:
        return self.root / GRADES

    def grades_csv(self, lesson: str) -> Path:
        return self.grades / f"{lesson}.csv"

    def grades_plot(self, lesson: str) -> Path:
        return self.grades / f"{lesson}.png"

    def grades_snapshot(self, lesson: str) -> Path:
        """The last run's grades, to say what changed since."""
        return self.grades / f"{lesson}.json"

    def feedback_bundle(self, lesson: str) -> Path:
        """One feedback file per student, named for upload to the LMS, and the same as a .zip beside it."""
        return self.grades / f"{lesson}-feedback"

    def log(self, lesson: str) -> Path:
        return self.root / GRADING_LOGS / f"{lesson}.log"

    # The term's facts besides the submissions and the gradebook (grader.grading.intake: collect, people;
    # grader.grading.policy.overrides; grader.authoring.release_guard).
    @property
    def term(self) -> Path:
        return self.root / TERM

    @property
    def attempts(self) -> Path:
        """Every notebook ever downloaded, per lesson and student: `<lesson>/<student>/<sha256>.ipynb`."""
        return self.term / "attempts"

    @property
    def people(self) -> Path:
        """The people registry: each person's id for the term, and the roster last given."""
        return self.term / "people.json"

    @property
    def overrides(self) -> Path:
        return self.term / "overrides.json"

    @property
    def releases(self) -> Path:
        """SHA-256 of the bytes each release wrote, so that releasing again knows them (release_guard)."""
        return self.term / "releases.json"

    @property
    def hub_staging(self) -> Path:
        """Where `hub-collect` stages the submissions it vouches for, removed when it is done."""
        return self.term / "hub-exchange"


# ---------------------------------------------------------------- grading data left in grader/state/

def old_data(root: Path) -> list[str]:
    """The entries of `root`/grader/state/ that hold grading data (sorted), none when there is no such folder."""
    folder = root / OLD_STATE
    if not folder.is_dir():
        return []
    return sorted(entry.name for entry in folder.iterdir() if entry.name not in OLD_LEFTOVERS)


def refuse_old_data(root: Path) -> None:
    """Raise OldGradingData when `root`/grader/state/ still holds grading data, saying what and how to move it."""
    found = old_data(root)
    if not found:
        return
    names = ", ".join(f"{name}/" if (root / OLD_STATE / name).is_dir() else name for name in found)
    raise OldGradingData(
        f"grading data found in {root / OLD_STATE}, where earlier versions of the course kept it: {names}.\n"
        f"It now lives at the course's root ({', '.join(GRADING_DATA)}), and nothing grades, releases or "
        "overrides until it is moved there. Move it, in the course's folder, with:\n"
        f"    {MOVE_COMMAND}\n"
        f"(python -m grader move-grading-data{'' if root == _repo() else f' --course {shlex.quote(str(root))}'}), "
        "then run "
        "the command again.")


def move_old_data(root: Path) -> list[tuple[Path, Path]]:
    """Move every entry of `root`/grader/state/ to its place at the course's root; return (from, to) for each.

    Refuses (OldGradingData), before moving anything, an entry it does not know and one whose new
    place is taken. Removes grader/state/ once only its old README (or nothing) is left.
    """
    old = root / OLD_STATE
    found = old_data(root)
    unknown = [name for name in found if name not in OLD_PLACES]
    if unknown:
        raise OldGradingData(f"{old} holds what no version of the course wrote there: {', '.join(unknown)}; "
                             "move or remove it by hand, then run this again")
    moves = [(old / name, root / OLD_PLACES[name]) for name in found]
    taken = [str(target) for _, target in moves if target.exists() or target.is_symlink()]
    if taken:
        raise OldGradingData("not moved: grading data is already at the new place of some of it: "
                             + ", ".join(taken) + "\nCompare the two and keep one of each, then run this again.")
    for source, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
    for leftover in OLD_LEFTOVERS:
        path = old / leftover
        if path.is_file():
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if old.is_dir() and not any(old.iterdir()):
        old.rmdir()
    return moves


def _repo() -> Path:
    return Path(__file__).resolve().parent.parent
