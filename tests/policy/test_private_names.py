"""The grader uses no private name of another library.

A private name (one underscore, not a dunder) of nbgrader, nbclient, jupyter_client, nbconvert,
SQLAlchemy, numpy or any other package can change in any release. Three ways of using one are
found: importing it (`from numpy._core import x`, `import numpy._core`), reading it from an object
of another library's (`engine.pool._dialect`: an attribute name that no code of the grader defines),
calling it on `super()`, and overriding it (a method of a grader class, traitlets' `@default` and
`@validate` handlers included, whose base class outside the grader has it).

ruff's SLF001 and PLC2701 (pyproject.toml) flag the simplest of these as code is written, everywhere
but the tests and benchmarks; they do not see a bare `import numpy._core`, a private name imported for
annotations only, a base class's private attribute read through self or super(), getattr by name or
an override, so the scan below stays whole.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import grader

GRADER = Path(grader.__file__).parent


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def sources() -> dict[str, ast.Module]:
    return {str(path.relative_to(GRADER.parent)): ast.parse(path.read_text(), str(path))
            for path in sorted(GRADER.rglob("*.py"))}


def own_names(trees: dict[str, ast.Module]) -> set[str]:
    """Every name the grader itself defines: functions, classes, assigned names and attributes."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _on_self(node):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _on_super(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and node.value.func.id == "super"


def used_private_names() -> set[str]:
    """`file: name` for each private name of another library the grader's code imports or reads."""
    trees = sources()
    ours = own_names(trees)
    found = set()
    for file, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and not node.module.startswith("grader"):
                parts = node.module.split(".") + [alias.name for alias in node.names]
                found |= {f"{file}: {part}" for part in parts if private(part)}
            elif isinstance(node, ast.Import):
                # the standard library's private modules too (_thread, say): they are not its interface
                found |= {f"{file}: {part}" for alias in node.names for part in alias.name.split(".")
                          if private(part) and not alias.name.startswith("grader")}
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr")
                  and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str) and private(node.args[1].value)
                  and node.args[1].value not in ours):
                found.add(f"{file}: {node.args[1].value}")  # a private attribute read by its name
            elif isinstance(node, ast.Attribute) and private(node.attr) and _on_super(node):
                found.add(f"{file}: {node.attr}")  # a base class's private method, even one the grader overrides
            elif isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in ours:
                if not (isinstance(node.value, ast.Name) and node.value.id in ("os", "sys") and node.attr == "_exit"):
                    found.add(f"{file}: {node.attr}")
    return found | overridden_private_methods()


def overridden_private_methods() -> set[str]:
    """`module: Class._name` for each private method of a base class outside the grader that grader code overrides."""
    found = set()
    for info in pkgutil.walk_packages([str(GRADER)], "grader."):
        config_files = ("nbgrader_config", "jupyterhub_config")  # read by nbgrader and JupyterHub, not imported
        if ".specs." in info.name or info.name.rsplit(".", 1)[-1] in ("template_server", *config_files):
            continue  # lesson specs, the sandbox's server script and the config files are not modules to import
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            outside = [base for base in cls.__mro__[1:] if not base.__module__.startswith("grader")]
            for name, value in cls.__dict__.items():
                value = getattr(value, "func", value)  # a traitlets @default, @validate or @observe handler
                written_here = inspect.isfunction(value) and value.__module__ == module.__name__
                if written_here and private(name) and any(name in vars(base) for base in outside):
                    found.add(f"{info.name}: {cls.__name__}.{name}")
    return found


def test_no_private_name_of_another_library():
    used = sorted(used_private_names())
    assert not used, f"private names of other libraries (use a public interface): {used}"


def test_the_scan_finds_each_kind_of_use(tmp_path, monkeypatch):
    package = tmp_path / "grader"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "uses.py").write_text(
        "import os\nimport numpy._core\nfrom numpy._core import _methods\n"
        "from nbclient import NotebookClient\n"
        "class Client(NotebookClient):\n    async def _async_handle_timeout(self, timeout, cell=None):\n        pass\n"
        "from nbconvert.exporters import TemplateExporter\nfrom traitlets import default, validate\n"
        "class Exporter(TemplateExporter):\n"
        "    @validate('template_name')\n    def _template_name_validate(self, proposal):\n        return ''\n"
        "    @default('extra_template_basedirs')\n    def _default_extra_template_basedirs(self):\n"
        "        return super()._default_extra_template_basedirs()\n"
        "def f(engine):\n    engine.pool._dialect = 1\n    return os._exit\n")
    monkeypatch.setattr(sys.modules[__name__], "GRADER", package)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name == "grader" or name.startswith("grader.")]:
        monkeypatch.delitem(sys.modules, name)
    assert used_private_names() == {"grader/uses.py: _core", "grader/uses.py: _methods",
                                    "grader/uses.py: _dialect", "grader.uses: Client._async_handle_timeout",
                                    "grader/uses.py: _default_extra_template_basedirs",
                                    "grader.uses: Exporter._template_name_validate",
                                    "grader.uses: Exporter._default_extra_template_basedirs"}


def test_ruff_flags_a_private_name_in_the_grader():
    # pyproject.toml's rules apply to the grader's own files (not ignored there, as in the tests).
    probe = "from numpy._core import umath\n\n\ndef f(engine):\n    return engine.pool._dialect, umath\n"
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "json",
                          "--stdin-filename", "grader/probe.py", "-"],
                         input=probe, capture_output=True, text=True, cwd=GRADER.parent, check=False)
    assert {finding["code"] for finding in json.loads(run.stdout)} == {"SLF001", "PLC2701"}, run.stderr
