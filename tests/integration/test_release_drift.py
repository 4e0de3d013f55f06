"""The committed student notebooks are exactly what nbgrader releases, and nbgrader validates both sides."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import LESSONS, lesson_ids, reference_notebook, student_notebook
from grader.extras import missing_extras


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
config.Validator.invert = sys.argv[1] == "invert"
config.Execute.extra_arguments = ["--InlineBackend.figure_formats=[]"]  # figures are not what is validated
validator = Validator(config=config)
results = {}
for path in sys.argv[2:]:
    try:
        results[path] = validator.validate(path)
    except Exception as error:  # a kernel that died or a cell over its time limit: that lesson's failure
        results[path] = {"error": repr(error)}
print(json.dumps(results))
"""


@functools.cache
def validated(*, invert: bool) -> dict[str, dict]:
    """lesson -> nbgrader's validation result, as a dict (its command always exits 0 and prints prose).

    One process validates every lesson whose extras are installed (the release with `invert`,
    else the reference), so that nbgrader starts once, not once per lesson.
    """
    lessons = [lesson for lesson in lesson_ids() if not missing_extras(lesson)]
    paths = [str(student_notebook(lesson) if invert else reference_notebook(lesson)) for lesson in lessons]
    done = subprocess.run([sys.executable, "-c", VALIDATE, "invert" if invert else "plain", *paths],
                          capture_output=True, text=True, timeout=1800, check=True)
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {lesson: results[path] for lesson, path in zip(lessons, paths, strict=True)}


# nbgrader's own validate reaches verdicts the shared batch already reaches by grading: the reference
# scores full marks there and the untouched release nothing. Both run in make test-all only.
@pytest.mark.same_verdicts
@pytest.mark.parametrize("invert", [pytest.param(False, id="reference-passes"),
                                    pytest.param(True, id="release-fails-every-test")])
def test_nbgrader_validation(lesson, invert):
    result = validated(invert=invert)[lesson]
    name = (student_notebook(lesson) if invert else reference_notebook(lesson)).name
    assert result == {}, f"nbgrader validate{' --invert' if invert else ''} {name}: {result}"
