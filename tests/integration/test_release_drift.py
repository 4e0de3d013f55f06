"""The committed student notebooks are exactly what nbgrader releases, and nbgrader validates both sides."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import LESSONS, reference_notebook, student_notebook


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


# The reference passing its visible checks is proven again by the shared batch, where it scores full marks.
@pytest.mark.parametrize("invert", [pytest.param(False, id="reference-passes", marks=pytest.mark.more_cases),
                                    pytest.param(True, id="release-fails-every-test")])
def test_nbgrader_validation(lesson, invert):
    path = student_notebook(lesson) if invert else reference_notebook(lesson)
    result = validate(path, invert=invert)
    assert result == {}, f"nbgrader validate{' --invert' if invert else ''} {path.name}: {result}"
