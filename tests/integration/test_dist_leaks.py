"""`make dist` publishes nothing secret: every file of a fresh distribution is scanned, and the scan can fail.

Secret here means: a solution or hidden-test line of a reference notebook (`secret_lines`), a line of
a trusted spec or of the trusted-check machinery that the released lessons and the student code do
not show anyway, an nbgrader region marker, a gradebook (by name or by SQLite's file header), any
of the course's grading data (grader.layout.GRADING_DATA: submissions, grades, logs, the term's facts), and
any instructor file or command (solutions/, specs, fixtures, release/reference/autograde/dist).
"""

from __future__ import annotations

import json
import re
import shutil
from functools import cache
from pathlib import Path

import nbformat
import pytest

from grader.authoring import dist
from grader.course import LESSONS, ROOT, checks_file, lesson_ids
from grader.layout import GRADING_DATA
from tests.support import may_show, reference_answers, secret_lines

MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS|BEGIN MARK SCHEME|BEGIN MARKED")
TRUSTED = ROOT / "grader" / "trusted"
FORBIDDEN_PATHS = re.compile(r"(^|/)(solutions|specs|trusted|fixtures|grading|authoring|pipeline|state)(/|$)"
                             r"|gradebook|\.db$|\.sqlite$|(^|/)submissions/"
                             rf"|^({'|'.join(map(re.escape, GRADING_DATA))})(/|$)")
INSTRUCTOR_WORDS = re.compile(r"\bgrader (release|reference|autograde|dist)\b|^(release|reference|autograde|dist):",
                              re.M)
SQLITE_HEADER = b"SQLite format 3\x00"


def public_text() -> str:
    """What the distribution may show by design: the released lessons and the course's student code."""
    files = [p for p in LESSONS.rglob("*") if p.is_file()] + list(dist.verbatim_files().values())
    return "\n".join(readable(p.read_bytes(), p.suffix == ".ipynb") for p in files)


@cache
def spec_lines() -> set[str]:
    """Lines of the lessons' hidden checks (solutions/<id>.checks.py) and of grader/trusted/ that nothing public
    contains."""
    public = public_text()
    private = [*TRUSTED.rglob("*.py"), *(checks_file(lesson) for lesson in lesson_ids())]
    lines = {line.strip() for path in private for line in path.read_text().splitlines()}
    return {line for line in lines if len(line) >= 16 and line not in public and not line.startswith("#")}


def readable(data: bytes, is_notebook: bool) -> str:
    """A file's text, and for a notebook also every string in it (cell sources, outputs) unescaped."""
    text = data.decode("utf-8", "replace")
    if is_notebook:
        strings = []

        def walk(node):
            if isinstance(node, str):
                strings.append(node)
            elif isinstance(node, dict):
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        try:
            walk(json.loads(text))
        except ValueError:
            pass
        text += "\n" + "".join(strings)
    return text


def leaks(root: Path) -> list[str]:
    """Every secret found in any file under `root`, as `path: what`."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        found += file_leaks(path.relative_to(root).as_posix(), path.read_bytes(), path.suffix == ".ipynb")
    return found


@cache
def file_leaks(name: str, data: bytes, is_notebook: bool) -> list[str]:
    """The secrets in one file, by its name and content (a copy of the distribution rescans only what changed)."""
    found = []
    if FORBIDDEN_PATHS.search(name):
        found.append(f"{name}: an instructor's file")
    if data.startswith(SQLITE_HEADER):
        found.append(f"{name}: an SQLite database (a gradebook?)")
    text = readable(data, is_notebook)
    if MARKERS.search(text):
        found.append(f"{name}: an nbgrader marker")
    if INSTRUCTOR_WORDS.search(text):
        found.append(f"{name}: an instructor command")
    for lesson, lines in secrets().items():
        if not may_show(name, lesson):
            found += [f"{name}: solution or hidden-test line of {lesson}: {line!r}" for line in lines if line in text]
    found += [f"{name}: trusted-spec line {line!r}" for line in spec_lines() if line in text]
    return found


@cache
def secrets() -> dict[str, set[str]]:
    return {lesson: secret_lines(lesson) for lesson in lesson_ids()}


@pytest.fixture
def copy(distribution, tmp_path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(distribution, target)
    return target


def test_there_are_secrets_to_look_for():
    # Guards the scan: an empty list of secrets would find nothing in anything.
    assert all(len(secret_lines(lesson)) >= 5 for lesson in lesson_ids())
    assert len(spec_lines()) >= 50


def test_a_fresh_distribution_holds_no_secret(distribution):
    assert (distribution / "lessons").is_dir() and (distribution / dist.RELEASES_PATH).is_dir()
    found = leaks(distribution)
    assert not found, "the distribution reveals:\n" + "\n".join(found[:30])


def _first_secret(lesson: str, regions: tuple[str, ...]) -> str:
    return sorted(secret_lines(lesson, regions))[0]


def _plant_in_notebook(path: Path, source: str) -> None:
    path.chmod(0o644)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(nb, path)


@pytest.mark.parametrize("plant", ["solution line", "hidden-test line", "spec line", "marker", "gradebook",
                                   "grading data", "solutions folder", "instructor command", "reference answer"])
def test_the_scan_finds_a_planted_secret(copy, plant):
    lesson = "03-parallel-heads"
    if plant == "solution line":
        _plant_in_notebook(copy / "lessons" / lesson / f"{lesson}.ipynb", _first_secret(lesson, ("SOLUTION",)))
    elif plant == "hidden-test line":
        _plant_in_notebook(copy / dist.RELEASES_PATH / f"{lesson}.ipynb", _first_secret(lesson, ("HIDDEN TESTS",)))
    elif plant == "spec line":
        (copy / "grader" / "student" / "notes.py").write_text(sorted(spec_lines())[0] + "\n")
    elif plant == "marker":
        (copy / "README.md").write_text((copy / "README.md").read_text() + "\n### BEGIN SOLUTION\n")
    elif plant == "gradebook":
        (copy / "grades.bin").write_bytes(SQLITE_HEADER + b"\0" * 100)
    elif plant == "grading data":
        (copy / "term").mkdir()
        (copy / "term" / "people.json").write_text("{}\n")
    elif plant == "solutions folder":
        (copy / "solutions").mkdir()
        (copy / "solutions" / "README.md").write_text("nothing yet\n")
    elif plant == "instructor command":
        (copy / "Makefile").write_text((copy / "Makefile").read_text() + "\nrelease:\n\t$(PY) -m grader release\n")
    elif plant == "reference answer":  # a whole solution cell, as a student could find it in a leaked notebook
        answers = reference_answers(lesson)
        _plant_in_notebook(copy / "lessons" / lesson / f"{lesson}.ipynb", next(iter(answers.values())))
    assert leaks(copy), f"a planted {plant} was not found"


def test_the_pristine_releases_are_the_lessons_as_released_read_only(distribution):
    manifest = json.loads((distribution / dist.MANIFEST_PATH).read_text())
    assert sorted(manifest["releases"]) == lesson_ids()
    for lesson, digest in manifest["releases"].items():
        pristine = distribution / dist.RELEASES_PATH / f"{lesson}.ipynb"
        assert pristine.read_bytes() == (LESSONS / lesson / f"{lesson}.ipynb").read_bytes()
        assert (distribution / "lessons" / lesson / f"{lesson}.ipynb").read_bytes() == pristine.read_bytes()
        assert dist.sha256(pristine.read_bytes()) == digest
        assert not pristine.stat().st_mode & 0o222, f"{pristine} is writable"
    for path, digest in manifest["files"].items():
        assert dist.sha256((distribution / path).read_bytes()) == digest, path
