"""grader.grading.outputs.similarity: copied answers found, given code never counted."""

from __future__ import annotations

import tomllib
from pathlib import Path

import nbformat

from grader.course import student_notebook
from grader.grading.outputs import similarity
from tests.support import FIXTURES, Variant, build

LESSON = "03-parallel-heads"
RELEASE = student_notebook(LESSON)
ANSWERS = tomllib.loads((FIXTURES / "instructor" / f"{LESSON}.toml").read_text())


def answers(name: str) -> dict[str, str]:
    return {k: v.strip() for k, v in ANSWERS[name]["answers"].items()}


def submissions(tmp_path: Path, variants: dict[str, Variant]) -> dict[str, Path]:
    paths = {}
    for name, variant in variants.items():
        paths[name] = tmp_path / f"{name}.ipynb"
        nbformat.write(build(LESSON, RELEASE, variant), paths[name])
    return paths


def test_similarity_finds_the_planted_copy_and_no_honest_pair(tmp_path):
    paths = submissions(tmp_path, {"ada": Variant("ada"), "grace": Variant("grace", answers=answers("honest_other")),
                                   "eve": Variant("eve", answers=answers("copied")),
                                   "alan": Variant("alan", untouched=True)})
    pairs = similarity.compare(paths, RELEASE)
    assert [(p.a, p.b) for p in pairs] == [("eve", "grace")]
    assert pairs[0].slices[0] and pairs[0].slices[1]
    page = similarity.write_html(tmp_path / "similar.html", LESSON, pairs, compared=4).read_text()
    assert "<mark>" in page and "eve and grace" in page and "changes no grade" in page


def test_untouched_notebooks_match_nothing_the_starter_code_is_excluded(tmp_path):
    paths = submissions(tmp_path, {name: Variant(name, untouched=True) for name in ("a", "b", "c")})
    assert similarity.compare(paths, RELEASE, threshold=0.01) == []
