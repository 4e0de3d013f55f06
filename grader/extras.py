"""The course's optional extras (PyTorch, browser tests, Dask, JupyterHub): which a machine has, how to get them.

A lesson or test that needs an extra is skipped, naming it and its install command, where it is
missing (tests/plugins/extras.py); LESSON_EXTRAS says which lessons need which.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Extra:
    """An optional extra: what it is, the modules or programs that show it is there, how to install it."""

    name: str
    install: str
    modules: tuple[str, ...] = ()
    program: str = ""  # an executable: at the path in the environment variable `env`, else on PATH or in `search`
    env: str = ""
    search: tuple[str, ...] = ()  # glob patterns of folders also looked in after PATH, newest version first
    beside: tuple[str, ...] = ()  # further programs that must be in the same folder as `program`

    def missing(self) -> list[str]:
        """The modules and program of this extra that this machine lacks (none imported, none run).

        An extra named in the environment variable WITHOUT_EXTRAS (comma-separated) counts as
        missing, so that the newcomer's path can be tried on a machine that has everything.
        """
        if self.name in os.environ.get(WITHOUT_EXTRAS, "").split(","):
            return [self.name]
        absent = [m for m in self.modules if _module_missing(m)]
        if self.program and not self.executable():
            absent.append(" with ".join([self.program, ", ".join(self.beside)]) if self.beside else self.program)
        return absent

    def executable(self, name: str = "") -> str | None:
        """The extra's program, or with `name` one of the programs `beside` it, as a path; None if not found.

        The program is the path in `env` if that is set; else the first one on PATH, then in the
        folders `search` matches (newest version first), that has every program of `beside` next to it.
        """
        if name and name not in self.beside:
            raise ValueError(f"{name} is not one of the programs beside {self.program}: {self.beside}")
        if not self.program:
            return None
        chosen = os.environ.get(self.env) if self.env else None
        candidates = [chosen] if chosen else [shutil.which(self.program),
                                              *(str(Path(folder) / self.program) for folder in self._folders())]
        for path in filter(None, candidates):
            folder = Path(path).parent
            if _runnable(path) and all(_runnable(folder / other) for other in self.beside):
                return str(folder / name) if name else path
        return None

    def _folders(self) -> list[str]:
        """The folders `search` matches, highest version number first (/usr/lib/postgresql/17/bin before 15)."""
        found = {folder for pattern in self.search for folder in glob.glob(pattern) if os.path.isdir(folder)}
        return sorted(found, key=lambda folder: [int(n) for n in re.findall(r"\d+", folder)], reverse=True)


def _runnable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


WITHOUT_EXTRAS = "WITHOUT_EXTRAS"


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ImportError:  # a parent package that is not there, or is not a package
        return True


# Where `make hub` installs JupyterHub's proxy: the course's own .venv/hub, nothing global.
HUB_PROXY_FOLDER = Path(__file__).resolve().parent.parent / ".venv" / "hub" / "node_modules" / ".bin"

EXTRAS = {
    "torch": Extra("torch", "make torch", modules=("torch",)),
    "playwright": Extra("playwright", "make browser", modules=("playwright.sync_api",)),
    "chromium": Extra("chromium", "apt-get install chromium", program="chromium", env="CHROMIUM"),
    # Grading at scale (docs/scale.md): a Dask cluster's executor, and a
    # PostgreSQL gradebook. Debian keeps PostgreSQL's server programs off PATH, in
    # /usr/lib/postgresql/<version>/bin; PG_CTL=/path/to/pg_ctl picks another installation.
    "dask": Extra("dask", "make scale", modules=("distributed",)),
    "postgres": Extra("postgres", "make scale && apt-get install postgresql", modules=("psycopg",),
                      program="pg_ctl", env="PG_CTL", search=("/usr/lib/postgresql/*/bin",),
                      beside=("initdb", "postgres")),
    # The hub (docs/jupyterhub.md): JupyterHub from PyPI, and its proxy from npm, which `make hub`
    # installs into the course's own .venv/hub (or CONFIGURABLE_HTTP_PROXY=/path/to/it).
    "jupyterhub": Extra("jupyterhub", "make hub", modules=("jupyterhub",), program="configurable-http-proxy",
                        env="CONFIGURABLE_HTTP_PROXY",
                        search=(str(HUB_PROXY_FOLDER),)),
}

# Lessons that need an extra: their tests are skipped, naming it, where it is missing (tests/plugins/extras.py).
LESSON_EXTRAS: dict[str, tuple[str, ...]] = {"05-pytorch-module": ("torch",)}


def missing_extras(lesson: str) -> list[Extra]:
    """The extras `lesson` needs that this machine does not have."""
    return [EXTRAS[name] for name in LESSON_EXTRAS.get(lesson, ()) if EXTRAS[name].missing()]
