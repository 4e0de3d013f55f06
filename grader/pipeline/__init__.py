"""What runs, in order, when the course releases, autogrades and gives feedback.

One nbgrader preprocessor per module of this package; each function below lists a pipeline's
steps, nbgrader's own and the course's, exactly as they run. grader/nbgrader_config.py assigns
them, so reading this file tells you what every nbgrader command of the course does.
"""


from __future__ import annotations

PIPELINE = "grader.pipeline"
NBGRADER = "nbgrader.preprocessors"
NBCONVERT = "nbconvert.preprocessors"

# nbgrader steps the course leaves out of nbgrader's own pipelines, and why.
LEFT_OUT = {
    "nbgrader.preprocessors.AssignLatePenalties": "the course's late policy decides lateness and penalty "
                                                   "(grader/grading/policy/late.py)",
}


def release_steps() -> list[str]:
    """`generate_assignment`: the reference notebook in solutions/ becomes the student's in lessons/."""
    return [
        f"{PIPELINE}.strip_nbval_markers.StripNbvalMarkers",  # before nbgrader locks and checksums cells
        f"{NBGRADER}.IncludeHeaderFooter",
        f"{NBGRADER}.InstantiateTests",
        f"{NBGRADER}.LockCells",
        f"{NBGRADER}.ClearSolutions",  # answers -> `raise NotImplementedError()` stubs
        f"{NBGRADER}.ClearOutput",
        f"{PIPELINE}.check_cell_metadata.CheckCellMetadata",  # nbgrader's, its schema checked once
        f"{NBGRADER}.ComputeChecksums",
        f"{NBGRADER}.SaveCells",  # every test cell, hidden part included, into the gradebook
        f"{NBGRADER}.ClearHiddenTests",
        f"{NBGRADER}.ClearMarkScheme",
        f"{NBGRADER}.ComputeChecksums",
        f"{PIPELINE}.check_cell_metadata.CheckCellMetadata",  # nbgrader's, its schema checked once
        f"{PIPELINE}.strip_pairing_metadata.StripPairingMetadata",
    ]


def sanitize_steps() -> list[str]:
    """`autograde`, first phase: put the submission back into the shape the gradebook knows."""
    return [
        f"{PIPELINE}.strip_grader_metadata.StripGraderMetadata",  # no flag of the grader's from the submission
        f"{NBGRADER}.ClearOutput",
        f"{NBGRADER}.DeduplicateIds",
        f"{NBGRADER}.OverwriteKernelspec",
        f"{PIPELINE}.repair_cells.RepairCells",  # nbgrader's OverwriteCells, surviving damaged notebooks
        f"{PIPELINE}.check_cell_metadata.CheckCellMetadata",  # nbgrader's, its schema checked once
    ]


def autograde_steps() -> list[str]:
    """`autograde`, second phase: run the cells and score the test cells."""
    return [
        f"{PIPELINE}.inject_trusted_checks.InjectTrustedChecks",  # fresh hidden-test inputs, harness first
        f"{PIPELINE}.guarded_execute.GuardedExecute",  # nbgrader's Execute, limited and surviving dead kernels
        f"{NBGRADER}.IgnorePattern",
        f"{NBCONVERT}.ClearMetadataPreprocessor",
        f"{NBGRADER}.LimitOutput",
        f"{PIPELINE}.verify_trusted_checks.VerifyTrustedChecks",  # the verdict, decided outside the kernel
        f"{NBGRADER}.SaveAutoGrades",
        # nbgrader's AssignLatePenalties is left out: the course's late policy decides lateness and
        # penalty from the LMS's time (grader/grading/policy/late.py); nbgrader's step, with no due
        # date in the gradebook and its plugin's "none" method, only ever wrote a penalty of 0.
        f"{PIPELINE}.check_cell_metadata.CheckCellMetadata",  # nbgrader's, its schema checked once
    ]


def feedback_steps() -> list[str]:
    """`generate_feedback`: the HTML page each student gets, without the hidden tests' source.

    The page is written by `feedback_exporter()`, which keeps no script in it.
    """
    return [
        f"{NBGRADER}.GetGrades",
        f"{PIPELINE}.exercise_labels.ExerciseLabels",  # "Exercise 3a", as the release names it
        f"{PIPELINE}.clear_hidden_tests.ClearHiddenTests",  # nbgrader's, on test cells only
        f"{PIPELINE}.clean_feedback.CleanFeedbackCells",  # an allowlist (nh3) over all a student controls
        f"{NBCONVERT}.CSSHTMLHeaderPreprocessor",
    ]


def feedback_exporter() -> str:
    """The exporter of `generate_feedback`: the course's feedback page, with no script and a strict CSP."""
    return f"{PIPELINE}.safe_feedback_page.SafeFeedbackExporter"
