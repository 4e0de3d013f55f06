"""The environment files agree, every import is declared, and the running environment is the lock's."""

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]  # the course root, found without importing the grader
EXTRAS = ("torch", "browser", "scale", "hub")
DECLARED = ["requirements.in", *(f"requirements-{extra}.in" for extra in EXTRAS)]
LOCKS = ["requirements.txt", *(f"requirements-{extra}.txt" for extra in EXTRAS)]


def requirement_lines(name: str) -> list[str]:
    """The requirement lines of a requirements file, comments and pip options (-c, -r) left out."""
    lines = (line.split("#")[0].strip() for line in (ROOT / name).read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def declared(name: str) -> list[Requirement]:
    return [Requirement(line) for line in requirement_lines(name)]


def locked(name: str) -> dict[str, str]:
    """canonical package name -> the exact version the lock names."""
    pins = {}
    for line in requirement_lines(name):
        req = Requirement(line)
        [spec] = req.specifier
        assert spec.operator == "==", f"{name}: {line} is not an exact pin; run `make upgrade`"
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_environment_yml_installs_the_lock():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*python=3\.11\s*$", text, re.M), "environment.yml must pin python=3.11"
    pip_entries = re.findall(r"^\s{6}-\s*(.+?)\s*$", text, re.M)
    assert pip_entries == ["-r requirements.txt"], (
        f"environment.yml's pip section must be exactly '-r requirements.txt' (the lock), found {pip_entries}")
    conda_packages = re.findall(r"^\s{2}-\s*([A-Za-z0-9_.-]+)", text, re.M)
    conda = {canonicalize_name(p.split("=")[0]) for p in conda_packages} - {"pip"}  # pip installs the lock
    duplicated = set(locked("requirements.txt")) & conda
    assert not duplicated, f"installed by both conda and requirements.txt: {duplicated}"


@pytest.mark.parametrize(("source", "lock"), list(zip(DECLARED, LOCKS, strict=True)))
def test_every_declared_package_is_locked_within_its_bounds(source, lock):
    pins = locked(lock)
    problems = [f"{req} is locked at {pins.get(canonicalize_name(req.name))}" for req in declared(source)
                if not req.specifier.contains(pins.get(canonicalize_name(req.name), "0"), prereleases=True)]
    assert not problems, f"{lock} does not satisfy {source}: {problems}; run `make upgrade`"


@pytest.mark.parametrize("lock", LOCKS[1:])
def test_the_extras_agree_with_the_course_lock(lock):
    base = locked("requirements.txt")
    differ = {name: (pin, base[name]) for name, pin in locked(lock).items() if name in base and base[name] != pin}
    assert not differ, f"{lock} pins these otherwise than requirements.txt: {differ}"


def test_every_declared_package_has_a_lower_bound():
    unbounded = [r.name for source in DECLARED for r in declared(source)
                 if not any(s.operator in (">=", "==", "~=") for s in r.specifier)]
    assert not unbounded, f"give these a lower bound: {unbounded}"


def test_the_installed_packages_are_the_locked_versions():
    """The course's lock, and each extra's lock where that extra is installed, exactly."""
    problems = []
    for lock in LOCKS:
        pins = locked(lock)
        extra_here = lock == "requirements.txt" or all(_installed(name) for name in declared_names(lock))
        for name, pin in pins.items() if extra_here else ():
            installed = _installed(name)
            if installed is None:
                problems.append(f"{name} is not installed")
            elif canonical_version(installed) != canonical_version(pin):
                problems.append(f"{name} {installed} is installed, {lock} locks {pin}")
    assert not problems, "; ".join(problems) + " (run `make clean env`)"


def declared_names(lock: str) -> list[str]:
    return [r.name for r in declared(lock.replace(".txt", ".in"))]


def canonical_version(text: str) -> str:
    return text.split("+")[0]  # 2.13.0+cpu is the 2.13.0 a lock names either way


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def deptry(project: Path, scratch: Path) -> tuple[int, str]:
    """deptry over `project`, configured by pyproject.toml's [tool.deptry] table given alone: deptry reads
    a pyproject's [project] table before any requirements file (osprey-oss/deptry#911). Its exit status,
    and its report (on stderr)."""
    table = re.search(r"^\[tool\.deptry\]\n.*?(?=^\[(?!tool\.deptry)|\Z)", (ROOT / "pyproject.toml").read_text(),
                      re.S | re.M)[0]
    config = scratch / "deptry.toml"
    config.write_text(table)
    run = subprocess.run([sys.executable, "-m", "deptry", ".", "--config", str(config), "--no-ansi"],
                         cwd=project, capture_output=True, text=True, check=False)
    return run.returncode, run.stdout + run.stderr


def test_every_import_is_declared_and_every_declared_package_used(tmp_path):
    """An import whose package is not declared works today only because something else pulls it in."""
    status, report = deptry(ROOT, tmp_path)
    assert status == 0, f"declare these packages in requirements*.in (or drop them):\n{report}"


def test_deptry_reads_every_declaration():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["deptry"]
    assert config["requirements_files"] == DECLARED, "pyproject.toml's [tool.deptry] must read every requirements*.in"


def test_deptry_finds_an_undeclared_import(tmp_path):
    # The test above can fail: requests is installed (nbgrader needs it), but the course declares it nowhere.
    project = tmp_path / "project"
    (project / "grader").mkdir(parents=True)
    for name in DECLARED:
        (project / name).write_text((ROOT / name).read_text())
    (project / "grader" / "probe.py").write_text("import requests\n")
    status, report = deptry(project, tmp_path)
    assert status == 1 and "grader/probe.py:1:8: DEP003 'requests'" in report, report


def test_matplotlib_backend_is_not_forced_for_kernels():
    # With MPLBACKEND=Agg exported, plt.show() in an executed notebook outputs no figure at all.
    assert os.environ.get("MPLBACKEND") is None, "unset MPLBACKEND (the Makefile unexports it)"


def test_importing_nbformat_builds_no_iri_parsers():
    # The lock leaves rfc3987-syntax out (see the Makefile): with it, every process that imports
    # nbformat (each grader, nbgrader and test process) spends 2-3 s building parsers at import.
    import importlib.util

    assert "rfc3987-syntax" not in locked("requirements.txt")
    assert importlib.util.find_spec("rfc3987_syntax") is None, "run `make clean env`, or pip uninstall rfc3987-syntax"


def test_every_place_that_checks_the_python_version_agrees_with_pyproject():
    need = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())[1]
    assert "requires-python" in (ROOT / "Makefile").read_text()  # the course's Makefile reads it from there
    shipped = (ROOT / "grader" / "authoring" / "dist_template" / "Makefile").read_text()  # no pyproject.toml there
    assert re.search(r"sys.version_info\[:2\] < \((\d+), (\d+)\)", shipped).groups() == tuple(need.split("."))
    assert f"python={need}" in (ROOT / "environment.yml").read_text()
