"""Tiny notebooks run by GuardedExecute in the sandbox, for the tests of the sandbox and its limits, and whether
this machine can give a kernel a cgroup of its own (root here; an ordinary user only with delegation)."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from grader.course import ROOT
from grader.pipeline.guarded_execute import GuardedExecute
from grader.sandbox.cgroup import CgroupUnavailable, KernelCgroup
from grader.sandbox.limits import KernelLimits
from tests.support import count_sandboxed_kernel


def run(*sources: str, **settings) -> nbformat.NotebookNode:
    """`sources` run by GuardedExecute with `settings`: its own, or KernelLimits' (memory_limit, ...)."""
    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    limits = {name: settings.pop(name) for name in list(settings) if KernelLimits.class_traits(config=True).get(name)}
    execute = GuardedExecute(**{"timeout": 60, "kernel_name": "python3", "on_notebook_start": count_sandboxed_kernel,
                                **settings}, config=Config({"KernelLimits": limits}))
    nb, _ = execute.preprocess(nb, {"metadata": {"path": str(ROOT)}})
    return nb


def text(cell) -> str:
    """A cell's printed text and error values, joined."""
    return "".join(o.get("text", "") + o.get("evalue", "") for o in cell.outputs)


def cgroups_here() -> bool:
    """Whether this process can make a kernel's cgroup."""
    try:
        KernelCgroup.create(f"grader-kernel-probe-{os.getpid()}", memory=0, tasks=0).remove()
    except CgroupUnavailable:
        return False
    return True


needs_cgroup = pytest.mark.skipif(not cgroups_here(), reason="no cgroup can be made here (not root, no delegation)")
