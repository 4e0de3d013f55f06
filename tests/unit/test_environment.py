"""The environment files agree, and the running environment is the one they describe."""

import os
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]


def requirements() -> list[Requirement]:
    lines = (REPO / "requirements.txt").read_text().splitlines()
    return [Requirement(line.split("#")[0]) for line in lines if line.split("#")[0].strip()]


def test_environment_yml_takes_its_pip_packages_from_requirements_txt():
    text = (REPO / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*python=3\.11\s*$", text, re.M), "environment.yml must pin python=3.11"
    pip_entries = re.findall(r"^\s{6}-\s*(.+?)\s*$", text, re.M)
    assert pip_entries == ["-r requirements.txt"], (
        f"environment.yml's pip section must be exactly '-r requirements.txt', found {pip_entries}")
    conda_packages = re.findall(r"^\s{2}-\s*([A-Za-z0-9_.-]+)", text, re.M)
    duplicated = {r.name.lower() for r in requirements()} & {p.split("=")[0].lower() for p in conda_packages}
    assert not duplicated, f"installed by both conda and requirements.txt: {duplicated}"


def test_every_requirement_is_installed_at_an_allowed_version():
    problems = []
    for req in requirements():
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            problems.append(f"{req.name} is not installed")
            continue
        if not req.specifier.contains(installed, prereleases=True):
            problems.append(f"{req.name} {installed} does not satisfy {req.specifier}")
    assert not problems, "; ".join(problems)


def test_every_requirement_has_a_lower_bound():
    unbounded = [r.name for r in requirements() if not any(s.operator in (">=", "==", "~=") for s in r.specifier)]
    assert not unbounded, f"give these a lower bound in requirements.txt: {unbounded}"


def test_matplotlib_backend_is_not_forced_for_kernels():
    # With MPLBACKEND=Agg exported, plt.show() in an executed notebook outputs no figure at all.
    assert os.environ.get("MPLBACKEND") is None, "unset MPLBACKEND (the Makefile unexports it)"


def test_importing_nbformat_builds_no_iri_parsers():
    # `make env` removes rfc3987-syntax (see the Makefile): with it, every process that imports
    # nbformat (each grader, nbgrader and test process) spends 2-3 s building parsers at import.
    import importlib.util

    assert importlib.util.find_spec("rfc3987_syntax") is None, "run `make clean env`, or pip uninstall rfc3987-syntax"
