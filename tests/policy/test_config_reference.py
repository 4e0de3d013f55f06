"""docs/configuration.md is what grader/authoring/config_reference.py writes, and lists every class with an option."""

from __future__ import annotations

import ast

from grader.authoring import config_reference
from grader.course import ROOT


def test_the_committed_reference_is_the_generated_one_and_names_no_folder_of_this_checkout():
    generated = config_reference.reference()
    assert config_reference.OUTPUT.read_text() == generated, (
        "docs/configuration.md is stale: run `.venv/bin/python -m grader.authoring.config_reference`")
    assert str(ROOT) not in generated


def classes_with_options() -> set[str]:
    """module.Class of every class of grader/ whose body declares an option (`.tag(config=True)`)."""
    found = set()
    for path in sorted((ROOT / "grader").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "tag"
                    and any(k.arg == "config" for k in call.keywords)
                    for statement in node.body for call in ast.walk(statement)):
                found.add(f"{module}.{node.name}")
    return found


def test_every_class_that_declares_an_option_is_in_the_reference():
    assert classes_with_options() == set(config_reference.CLASSES)
