"""nbgrader configuration of the course, loaded by ../nbgrader_config.py: folders, pipelines, limits.

nbgrader's own folders are mapped onto the course layout instead of renaming the course:
solutions/<lesson>/ is nbgrader's source, lessons/<lesson>/ its release, and everything grading
writes lives at the course's root, where nbgrader keeps it by default (grader/layout.py). What each
command runs is in grader/pipeline.
"""

from pathlib import Path

from nbgrader.apps import NbGrader
from traitlets.config import Application

from grader import pipeline
from grader.course import ROOT
from grader.errors import OldGradingData
from grader.layout import AUTOGRADED, FEEDBACK, GRADEBOOK, SUBMITTED, refuse_old_data
from grader.sandbox.limits import ONE_BLAS_THREAD

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# ---- grading data an earlier version left in grader/state/
# `python -m grader` refuses it (grader/layout.py). A plain `nbgrader ...` command, run in the course's
# folder, must stop too, before it starts a new, empty gradebook at the root: an exception would not
# stop it (traitlets logs a config file that raises and goes on without it), so the command exits here
# with the same message. A Jupyter server that reads this file (the formgrader's) is not stopped.
if Application.initialized() and isinstance(Application.instance(), NbGrader):
    for course_root in dict.fromkeys((ROOT, Path.cwd().resolve())):
        try:
            refuse_old_data(course_root)
        except OldGradingData as error:
            raise SystemExit(f"nbgrader stopped: {error}") from None

# ---- where things are
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "lessons"
c.CourseDirectory.submitted_directory = SUBMITTED
c.CourseDirectory.autograded_directory = AUTOGRADED
c.CourseDirectory.feedback_directory = FEEDBACK
# timeout= lets parallel graders wait for SQLite's write lock instead of failing with "database is locked".
c.CourseDirectory.db_url = f"sqlite:///{ROOT / GRADEBOOK}?timeout=60"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "collected.json"]

# ---- the pipelines
c.GenerateAssignment.preprocessors = pipeline.release_steps()
# The course's self-check builds each lesson's release in memory from solutions/ (a distribution
# ships pristine copies instead): grader/student/originals.py.
c.Originals.builder = "grader.authoring.release_in_memory.build_release"
c.Autograde.sanitize_preprocessors = pipeline.sanitize_steps()
c.Autograde.autograde_preprocessors = pipeline.autograde_steps()
c.GenerateFeedback.preprocessors = pipeline.feedback_steps()
c.GenerateFeedback.exporter_class = pipeline.feedback_exporter()
# Each notebook is validated once, after the last step, not after every step of a pipeline.
c.Exporter.optimistic_validation = True

# ---- settings of the steps
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# A locked test cell that a student deleted is put back and run, not silently skipped.
c.OverwriteCells.add_missing_cells = True
# Per-cell time limit when autograding; an infinite loop costs this once per cell that hits it.
c.Execute.timeout = 30
# Each kernel is used once: after the last cell it is killed, not asked to shut down and waited for
# (every output is already in; nothing the kernel would still do at exit can change the grade).
c.Execute.shutdown_kernel = "immediate"
# Tracebacks show the exception and its message, not the source lines of (hidden) tests; no kernel
# reads or writes IPython's history file.
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal", "--HistoryManager.hist_file=:memory:"]
# ---- the sandbox and its limits, per submission (docs/trust.md)
c.GuardedExecute.sandbox = True  # `--unsafe-no-sandbox` turns it off, and every result then says so
# Two memory limits, two meanings. memory_limit is each process's address space (RLIMIT_AS): the hidden
# memory cases of the lessons depend on it (a full (T, T) table must not fit: MEMORY_CASE_T in
# solutions/10-attention-cost.checks.py, checked by tests/integration/test_10_attention_cost.py); raise
# those cases with it. tree_memory_limit is the resident memory of the kernel's whole cgroup (shm, tmpfs
# and memfd pages included): what one submission may take from the machine, which
# tests/integration/test_hostile.py reads back from this file.
c.KernelLimits.memory_limit = 4 * 1024**3  # bytes of address space per process; NumPy reserves ~1 GiB at start
c.KernelLimits.tree_memory_limit = 3 * 1024**3  # bytes of resident memory of the whole process tree
c.KernelLimits.max_processes = 64  # processes of the tree (and, with a uid of its own, threads)
c.KernelLimits.file_size_limit = 64 * 1024**2  # bytes of the largest file a kernel may write
c.KernelLimits.disk_limit = 256 * 1024**2  # bytes of each writable tmpfs: /tmp, HOME, the working directory
c.GuardedExecute.notebook_timeout = 600  # seconds of all of a submission's cells together
c.GuardedExecute.output_bytes_per_cell = 2 * 1024**2  # bytes of output kept per cell, as it arrives
c.GuardedExecute.output_bytes_per_notebook = 16 * 1024**2  # and per notebook
# One BLAS thread per kernel (grader/sandbox/limits.py says why).
c.GuardedExecute.kernel_env = dict(ONE_BLAS_THREAD)
# Grading shortcuts. Each kernel is told it is being graded (NBGRADER_EXECUTION=autograde): through
# lesson_helpers.py a lesson runs its demonstrations smaller. The kernel argument below draws no figure:
# the graded copy and the feedback show each one as its text (`<Figure size 1100x950 with 4 Axes>`).
# Figures grade nothing, and drawing them is the costliest thing most lessons do.
c.GuardedExecute.grading_shortcuts = True  # False grades every cell at full size: test_grading_shortcuts.py
c.GuardedExecute.shortcut_arguments = ["--InlineBackend.figure_formats=[]"]
# A Python warning on stderr (a RuntimeWarning from the student's code, IPython's note after
# sys.exit()) or a warning logged with `logging` in its default format (`WARNING:root:...`) does not
# make a test cell that passed its assertions score 0.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?m)^(?:\S.*:\d+: \w*Warning: |(?:WARNING|INFO|DEBUG):[^\s:]*:)"
c.LimitOutput.max_lines = 1000  # lines of output kept per cell (nbgrader's default, made explicit)
# Feedback: only text, sanitised HTML and re-encoded images from the cells (grader/pipeline/clean_feedback.py),
# and no page over 8 MiB.
c.SafeFeedbackExporter.max_bytes = 8 * 1024**2
# ---- the late policy (grader/grading/policy/late.py): deadlines per lesson, extensions per student, and the
# penalty per started day late. Applied on every run to the stored scores and submission times (no
# kernel runs again when it changes); nbgrader is given no due date. No deadline: never late.
c.LatePenalty.percent_per_day = 10.0  # of the notebook's score, per started day late
c.LatePenalty.max_percent = 100.0
c.LatePolicy.deadlines = {}  # e.g. {"03-parallel-heads": "2026-12-01 23:59:00 UTC"}
c.LatePolicy.extensions = {}  # e.g. {"03-parallel-heads": {"ada": 48}}: hours, per student
# ---- the LMSs (grader/grading/intake/lms/, one module each). Canvas's and Blackboard's import files: name each
# lesson's column as the LMS's own export heads it, so that an import updates it rather than creating one.
c.CanvasImport.columns = {}  # e.g. {"03-parallel-heads": "Lesson 3: parallel heads (123456)"}
c.CanvasImport.per_exercise = False
c.BlackboardImport.columns = {}  # e.g. {"03-parallel-heads": "Lesson 3 [Total Pts: 15 Score] |123456"}
c.BlackboardDownload.time_zone = "UTC"  # the Blackboard server's zone, e.g. "Europe/Amsterdam"
# ---- which LMS import files a run writes (grader/grading/outputs/lesson_reports.py): by default that of the LMS
# the students came from (every LMS's when none is known); name those to write.
c.LmsImport.lms = []  # e.g. ["canvas", "moodle"]
