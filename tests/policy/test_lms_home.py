"""An LMS has one home, its module in grader/grading/intake/lms/: no other module of the grader branches on an
LMS's name or on the name of one of its roster exports (docs/development.md, "Adding an LMS")."""

from __future__ import annotations

import ast

from grader.course import ROOT
from grader.grading.intake.lms import registry


def test_no_module_outside_the_lms_modules_compares_an_lms_name():
    """Adding an LMS touches its module: nothing else in grader/ may branch on "canvas", "moodle", ..."""
    names = {lms.name for lms in registry.lmss()} | {form.kind for form, _ in registry.roster_formats()}
    home = ROOT / "grader" / "grading" / "intake" / "lms"
    found = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        if home in path.parents or "dist_template" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {s!r}" for s in strings if s in names]
            if isinstance(node, ast.Dict):  # a table keyed by LMS names, such as the old LMS_OF_FORMAT
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {k!r}" for k in keys if k in names]
    assert found == []
