"""No test module imports another: shared helpers live in helper modules (tests/support.py and the like)."""

from __future__ import annotations

import ast

from grader.course import ROOT

TESTS = ROOT / "tests"


def imported_test_modules(source: str) -> list[str]:
    """The modules named test_* that `source` imports, at any depth (inside functions too)."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return sorted({name for name in names if any(part.startswith("test_") for part in name.split("."))})


def test_the_scan_sees_an_import_of_a_test_module():
    assert imported_test_modules("from tests.integration.test_a import run\nimport os") == [
        "tests.integration.test_a", "tests.integration.test_a.run"]
    assert imported_test_modules("def f():\n    import tests.unit.test_b\n") == ["tests.unit.test_b"]
    assert imported_test_modules("from tests.support import run\nfrom tests.integration import guarded_run") == []


def test_no_test_module_imports_another():
    offenders = {str(path.relative_to(ROOT)): found for path in sorted(TESTS.rglob("*.py"))
                 if (found := imported_test_modules(path.read_text(encoding="utf-8")))}
    assert not offenders, offenders
