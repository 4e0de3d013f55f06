"""One home for every place and name: nothing in grader/ defines again a name the places modules define.

grader/student/layout.py holds the course's own paths and file names (its root, lessons, solutions,
a distribution's files, the nbgrader configuration it reads), grader/layout.py those of grading's
data. Another module may import and re-export them; a module-level assignment, function or class
of the same name anywhere else is a second definition, which a maintainer's change to one copy
would silently leave behind.
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.student.layout import ROOT

PLACES = [ROOT / "grader" / "student" / "layout.py", ROOT / "grader" / "layout.py"]
# Defined in both places modules on purpose: private helpers' names, and the dunder names every module has.
GENERIC = {"annotations"}


def defined(path: Path) -> dict[str, int]:
    """Module-level names a file defines (assignments, functions, classes), with their lines; imports aside."""
    names: dict[str, int] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node.lineno
    return {name: line for name, line in names.items() if not name.startswith("_") and name not in GENERIC}


def test_no_module_defines_a_place_again():
    homes = {name: path for path in PLACES for name in defined(path)}
    again = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        if path in PLACES or "dist_template" in path.parts:  # the distribution's own tests import layout
            continue
        for name, line in defined(path).items():
            if name in homes:
                again.append(f"{path.relative_to(ROOT)}:{line} defines {name}, whose home is "
                             f"{homes[name].relative_to(ROOT)}: import it from there")
    assert not again, "\n".join(again)


def test_the_check_sees_a_second_definition(tmp_path):
    """The rule can fail: a module that assigns a place's name is found."""
    module = tmp_path / "module.py"
    module.write_text('from pathlib import Path\nSOLUTIONS = Path("solutions")\n\n\ndef lesson_ids():\n    return []\n')
    homes = {name for path in PLACES for name in defined(path)}
    assert {"SOLUTIONS", "lesson_ids"} <= set(defined(module)) & homes
