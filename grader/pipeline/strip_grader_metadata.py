"""Autograde step, first: drop from a submission every metadata key the grader itself writes.

The grader records in a graded notebook's metadata how it was graded (`graded_without_sandbox`,
`graded_without_cgroup`, `graded_as_grader_uid`) and the trusted checks' verdicts (`trusted_checks`,
in the notebook's and in each test cell's metadata); grader.grading.running.triage turns the first three into
the flags, the CSV's columns and the summary's `UNSAFE:`/`WEAKER:` lines. A submission is the
student's file: a key of these in it would pass for the grader's. They are removed before anything
runs, so that only the grading of this run can set them.
"""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from grader.pipeline.guarded_execute import GRADER_UID, UNSAFE, WATCHDOG_ONLY
from grader.trusted.prepared_checks import RESOURCE

NOTEBOOK_KEYS = (UNSAFE, WATCHDOG_ONLY, GRADER_UID, RESOURCE)  # the notebook's metadata keys the grader writes
CELL_KEYS = (RESOURCE,)  # a cell's metadata keys the grader writes


class StripGraderMetadata(NbGraderPreprocessor):
    """Remove NOTEBOOK_KEYS from the notebook's metadata and CELL_KEYS from every cell's; log each one found."""

    def preprocess(self, nb, resources):
        found = [key for key in NOTEBOOK_KEYS if nb.metadata.pop(key, None) is not None]
        for cell in nb.cells:
            found += [f"cell {key}" for key in CELL_KEYS if cell.get("metadata", {}).pop(key, None) is not None]
        if found:
            self.log.warning("the submission carried the grader's own metadata, removed: %s", ", ".join(found))
        return nb, resources
