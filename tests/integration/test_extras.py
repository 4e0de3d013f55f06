"""Optional extras: a test that needs one is skipped where it is missing, saying which and how to install it.

Each extra is made missing on its own (WITHOUT_EXTRAS), so what else this machine lacks does not matter.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.extras import EXTRAS, WITHOUT_EXTRAS, Extra

# A test that needs each extra, and starts nothing when skipped.
NEEDS = {
    "torch": "solutions/05-pytorch-module",
    "playwright": "tests/e2e/test_browser.py",
    "chromium": "tests/e2e/test_browser.py",
    "dask": "tests/integration/test_scale.py",
    "postgres": "tests/integration/test_scale.py",
    "jupyterhub": "tests/e2e/test_hub.py",
}


def test_every_extra_has_a_test_that_needs_it():
    assert set(NEEDS) == set(EXTRAS)


def test_without_the_extras_their_tests_are_skipped_naming_each_and_its_install_command():
    from grader.course import ROOT

    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | {WITHOUT_EXTRAS: ",".join(EXTRAS)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:xdist", *sorted(set(NEEDS.values()))],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0 and "passed" not in out and " skipped" in out, out + done.stderr
    [summary] = [line for line in out.splitlines() if line.startswith("optional extras missing:")]
    for name, extra in EXTRAS.items():
        assert f"{name} (install: `{extra.install}`)" in out, out
        assert f"{name} ({extra.install}): " in summary, summary


def test_an_extra_is_missing_when_its_module_or_program_is(monkeypatch, tmp_path):
    monkeypatch.delenv(WITHOUT_EXTRAS, raising=False)
    assert Extra("x", "make x", modules=("no_such_module_here",)).missing() == ["no_such_module_here"]
    assert Extra("x", "make x", modules=("json.no_such",)).missing() == ["json.no_such"]
    assert Extra("x", "make x", modules=("json",)).missing() == []
    program = Extra("x", "make x", program="no-such-program-here", env="X_PROGRAM")
    assert program.missing() == ["no-such-program-here"]
    monkeypatch.setenv("X_PROGRAM", str(tmp_path / "absent"))
    assert program.missing() == ["no-such-program-here"]
    monkeypatch.setenv("X_PROGRAM", sys.executable)
    assert program.missing() == [] and program.executable() == sys.executable
    monkeypatch.setenv(WITHOUT_EXTRAS, "y,x")
    assert Extra("x", "make x", modules=("json",)).missing() == ["x"]


def _programs(folder, *names):
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return folder


def test_a_program_is_also_found_in_search_folders_newest_version_first_with_its_companions(monkeypatch, tmp_path):
    monkeypatch.delenv(WITHOUT_EXTRAS, raising=False)
    monkeypatch.delenv("X_CTL", raising=False)
    lib = tmp_path / "lib"
    _programs(lib / "9" / "bin", "x_ctl", "x_init")
    newest = _programs(lib / "17" / "bin", "x_ctl", "x_init")
    _programs(lib / "18" / "bin", "x_ctl")  # newer, but without its companion: not chosen
    on_path = _programs(tmp_path / "path", "x_ctl")  # on PATH, without its companion either
    monkeypatch.setenv("PATH", str(on_path))
    extra = Extra("x", "make x", program="x_ctl", env="X_CTL", search=(str(lib / "*" / "bin"),), beside=("x_init",))
    assert extra.missing() == []
    assert extra.executable() == str(newest / "x_ctl") and extra.executable("x_init") == str(newest / "x_init")
    _programs(tmp_path / "path2", "x_ctl", "x_init")
    monkeypatch.setenv("PATH", str(tmp_path / "path2"))  # PATH comes before the search folders
    assert extra.executable("x_init") == str(tmp_path / "path2" / "x_init")
    monkeypatch.setenv("X_CTL", str(lib / "9" / "bin" / "x_ctl"))  # the environment variable before both
    assert extra.executable("x_init") == str(lib / "9" / "bin" / "x_init")
    monkeypatch.setenv("X_CTL", str(lib / "18" / "bin" / "x_ctl"))
    assert extra.executable() is None and extra.missing() == ["x_ctl with x_init"]
    monkeypatch.delenv("X_CTL")
    monkeypatch.setenv("PATH", str(on_path))
    lonely = Extra("x", "make x", program="x_ctl", search=(str(lib / "1*" / "bin"),), beside=("x_init", "x_other"))
    assert lonely.missing() == ["x_ctl with x_init, x_other"]
    with pytest.raises(ValueError, match="not one of the programs"):
        extra.executable("rm")


def test_postgres_extra_looks_where_debian_installs_the_server():
    postgres = EXTRAS["postgres"]
    assert "/usr/lib/postgresql/*/bin" in postgres.search
    assert {postgres.program, *postgres.beside} >= {"initdb", "pg_ctl"} and postgres.modules == ("psycopg",)
