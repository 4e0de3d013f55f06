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

# Releasing: nbval's markers out first (before nbgrader locks and checksums cells), then nbgrader's
# pipeline, then drop the jupytext pairing from the student copy.
c.GenerateAssignment.preprocessors = [
    "grader.preprocessors.StripNbvalMarkers",
    *GenerateAssignment.class_traits()["preprocessors"].default(),
    "grader.preprocessors.StripPairingMetadata",
]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Grading: a locked test cell that a student deleted is put back and run, not silently skipped.
c.OverwriteCells.add_missing_cells = True
# Per-cell time limit when autograding; an infinite loop costs this once per cell that hits it.
c.Execute.timeout = 30

# Grading at class scale (`python -m grader autograde`, see grader/autograde.py). Plain
# `nbgrader autograde` and `nbgrader generate_feedback` get the same settings.
from nbgrader.converters import Autograde, GenerateFeedback  # noqa: E402

_default = {name: Autograde.class_traits()[name].default()
            for name in ("sanitize_preprocessors", "autograde_preprocessors")}
# OverwriteCells, plus: stripped metadata restored by position, deleted runs of cells survived.
c.Autograde.sanitize_preprocessors = [
    "grader.repair.RepairCells" if pp.__name__ == "OverwriteCells" else pp for pp in _default["sanitize_preprocessors"]
]
# Execute, plus: a memory limit on each kernel, and a kernel that dies costs the cells after it,
# not the submission.
c.Autograde.autograde_preprocessors = [
    "grader.sandbox.GuardedExecute" if pp.__name__ == "Execute" else pp for pp in _default["autograde_preprocessors"]
]
c.GuardedExecute.memory_limit = 4 * 1024**3  # bytes of address space; a kernel with NumPy reserves ~1 GiB
# One BLAS thread per kernel: parallel graders already use every core, and spinning BLAS threads
# competing for them made the same notebook 2-4x slower.
c.GuardedExecute.kernel_env = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
# Tracebacks show the exception and its message, not the source lines of (hidden) tests.
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal"]
# A Python warning on stderr (a RuntimeWarning from the student's code, IPython's note after
# sys.exit()) does not make a test cell that passed its assertions score 0.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?m)^\S.*:\d+: \w*Warning: "
c.LimitOutput.max_lines = 1000  # lines of output kept per cell (nbgrader's default, made explicit)
# Feedback shows visible tests and their messages, never the hidden tests' source.
c.GenerateFeedback.preprocessors = [
    *GenerateFeedback.class_traits()["preprocessors"].default()[:1],  # GetGrades
    "nbgrader.preprocessors.ClearHiddenTests",
    *GenerateFeedback.class_traits()["preprocessors"].default()[1:],  # CSSHTMLHeaderPreprocessor
]

# Hidden tests are judged in the grading process, not in the student's kernel (grader/trusted).
# Keep this block last: it inserts two steps into whatever autograde pipeline is configured above.
# Order matters: InjectTrustedChecks runs after sanitising has restored the test cells, right
# before Execute; VerifyTrustedChecks right before SaveAutoGrades, after IgnorePattern and
# LimitOutput, so that nothing between it and the saved grade can drop the verdict it writes.
from nbgrader.converters import Autograde as _Autograde  # noqa: E402

from grader.trusted.preprocessors import with_trusted_checks  # noqa: E402

c.Autograde.autograde_preprocessors = with_trusted_checks(
    c.Autograde.get("autograde_preprocessors") or _Autograde.class_traits()["autograde_preprocessors"].default())
