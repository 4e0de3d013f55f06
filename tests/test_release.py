"""The committed student notebooks are exactly what nbgrader releases, and reveal nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.course import LESSONS, REPO, reference_notebook, student_notebook

MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS|BEGIN MARK SCHEME")


def normalised(path: Path) -> dict:
    """A notebook as JSON, minus what may legitimately differ between two releases."""
    nb = json.loads(path.read_text())
    nb["metadata"].get("language_info", {}).pop("version", None)  # the Python patch release
    return nb


def test_committed_release_matches_a_fresh_release(course, lesson):
    fresh, committed = course.lessons / lesson, LESSONS / lesson
    fresh_files = sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    committed_files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert committed_files == fresh_files, "lessons/ has other files than a fresh release: run `make release`"
    for rel in fresh_files:
        if rel.suffix == ".ipynb":
            same = normalised(fresh / rel) == normalised(committed / rel)
        else:
            same = (fresh / rel).read_bytes() == (committed / rel).read_bytes()
        assert same, f"lessons/{lesson}/{rel} is stale: run `make release`"


def region_lines(source: str, begin: str, end: str) -> list[str]:
    """Lines strictly between `### BEGIN x` and `### END x` markers."""
    inside, lines = False, []
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def secret_lines(lesson: str) -> set[str]:
    """Solution and hidden-test lines of a reference notebook that appear nowhere else in it.

    A line that the lesson also shows in visible cells (a closing bracket, `return out`) is not a
    secret; every other line of reasonable length is.
    """
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    secrets, visible = set(), set()
    for cell in nb.cells:
        hidden = (region_lines(cell.source, "BEGIN SOLUTION", "END SOLUTION")
                  + region_lines(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
        secrets.update(hidden)
        visible.update(line.strip() for line in cell.source.splitlines() if line.strip() not in hidden)
    return {line for line in secrets - visible if len(line) >= 12}


def test_reference_notebooks_have_secrets_to_protect(lesson):
    # Guards the leak test below: it must have solution and hidden-test lines to look for.
    assert len(secret_lines(lesson)) >= 5


def test_no_solution_or_hidden_test_text_anywhere_in_lessons(lesson):
    secrets = secret_lines(lesson)
    leaks = []
    for path in sorted(p for p in LESSONS.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if MARKERS.search(text):
            leaks.append(f"{path.relative_to(REPO)}: an nbgrader marker")
        leaks += [f"{path.relative_to(REPO)}: {line!r}" for line in secrets if line in text]
    assert not leaks, "solution or hidden-test text reached lessons/:\n" + "\n".join(leaks[:20])


def test_release_carries_no_jupytext_pairing(lesson):
    # Otherwise saving the lesson in JupyterLab would write a stray .py next to it.
    assert "jupytext" not in json.loads(student_notebook(lesson).read_text())["metadata"]


VALIDATE = """
import json, sys
from nbgrader.validator import Validator
from traitlets.config import Config
config = Config()
config.Validator.invert = sys.argv[2] == "invert"
print(json.dumps(Validator(config=config).validate(sys.argv[1])))
"""


def validate(path: Path, *, invert: bool = False) -> dict:
    """nbgrader's validation result as a dict (its command always exits 0 and prints prose)."""
    done = subprocess.run([sys.executable, "-c", VALIDATE, str(path), "invert" if invert else "plain"],
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("invert", [False, True], ids=["reference-passes", "release-fails-every-test"])
def test_nbgrader_validation(lesson, invert):
    path = student_notebook(lesson) if invert else reference_notebook(lesson)
    result = validate(path, invert=invert)
    assert result == {}, f"nbgrader validate{' --invert' if invert else ''} {path.name}: {result}"
