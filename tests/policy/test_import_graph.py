"""No import cycle among the grader's modules: every import counted, those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

from grader.course import ROOT

PACKAGE = ROOT / "grader"


def module_name(path: Path, repo: Path) -> str:
    parts = path.relative_to(repo).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the grader modules it imports (a package's own __init__ is not counted as a dependency)."""
    modules = {module_name(p, root.parent): p for p in root.rglob("*.py") if "dist_template" not in p.parts}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], base]).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan), as a path."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_grader_imports_itself_back():
    assert cycles(graph()) == []


def test_the_search_finds_a_cycle_through_a_function_level_import(tmp_path):
    package = tmp_path / "grader"
    (package / "grading").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "grading" / "__init__.py").write_text("")
    (package / "grading" / "collect.py").write_text("from grader.grading import lms\n")
    (package / "grading" / "lms.py").write_text("def f():\n    from .collect import x\n")
    (package / "grading" / "late.py").write_text("from grader.grading.lms import f\n")
    assert cycles(graph(package)) == [["grader.grading.collect", "grader.grading.lms"]]


# grader/grading's stages, in the order a batch goes through them: a stage may use an earlier one, never a later.
STAGES = ["intake", "running", "policy", "outputs"]


def backward_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for every import of a grading stage by an earlier stage."""
    def stage(module: str) -> int | None:
        parts = module.split(".")
        return STAGES.index(parts[2]) if len(parts) > 2 and parts[:2] == ["grader", "grading"] and parts[2] in STAGES \
            else None

    return sorted((name, target) for name, targets in edges.items() for target in targets
                  if stage(name) is not None and stage(target) is not None and stage(target) > stage(name))


def test_grading_is_one_folder_per_stage_and_no_stage_uses_a_later_one():
    folder = PACKAGE / "grading"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(STAGES)
    assert sorted(p.name for p in folder.glob("*.py")) == ["__init__.py", "autograde.py"]
    assert backward_imports(graph()) == []


def test_the_stage_check_finds_an_earlier_stage_importing_a_later_one(tmp_path):
    package = tmp_path / "grader"
    for stage in ("intake", "outputs"):
        (package / "grading" / stage).mkdir(parents=True)
        (package / "grading" / stage / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "grading" / "__init__.py").write_text("")
    (package / "grading" / "outputs" / "report.py").write_text("from grader.grading.intake import ids\n")
    (package / "grading" / "intake" / "ids.py").write_text("def f():\n    from ..outputs.report import x\n")
    assert backward_imports(graph(package)) == [("grader.grading.intake.ids", "grader.grading.outputs.report")]
