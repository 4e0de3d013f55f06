"""The reference notebooks print the same on any x86 CPU: no committed output shows rounding noise.

numpy picks its SIMD loops (AVX-512, AVX2 or SSE), and OpenBLAS its kernels, for the CPU it runs on;
the last bits of a sum or a matrix product, and so the digits of a rounding-level result, change
with them. nbval compares each cell's output with the committed one, so a cell that prints such
digits (a finite-difference error of 3.5e-11, a score's 17th digit) passes on one machine and fails
on the next. Here every reference notebook runs once more with other code paths than this CPU's
own (numpy's best SIMD level switched off, OpenBLAS's Sandy Bridge kernels), and must print what
is committed.
"""

from __future__ import annotations

import copy
import platform
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbval.plugin import coalesce_streams, get_sanitize_patterns

from grader.course import ROOT, reference_notebook

pytestmark = pytest.mark.same_verdicts  # the same outputs on other CPU code paths

IGNORED = "NBVAL_IGNORE_OUTPUT"


def other_code_paths() -> dict[str, str]:
    """Environment variables that give numpy and OpenBLAS other loops than this CPU would choose."""
    from numpy._core._multiarray_umath import __cpu_features__

    levels = {"X86_V3": ("AVX2", "FMA3"), "X86_V4": ("AVX512F", "AVX512_SKX")}
    found = [level for level, features in levels.items() if all(__cpu_features__.get(f) for f in features)]
    return {"NPY_DISABLE_CPU_FEATURES": " ".join(found), "OPENBLAS_CORETYPE": "Sandybridge"}


SANITISE = get_sanitize_patterns((ROOT / "tests" / "nbval-sanitize.cfg").read_text())  # as nbval reads it


def printed(cell: nbformat.NotebookNode) -> str:
    """What a code cell printed and returned as text, as nbval compares it: streams coalesced, sanitised."""
    parts = []
    for output in coalesce_streams(copy.deepcopy(cell.get("outputs", []))):
        if output.output_type == "stream":
            parts.append(f"[{output.name}] {output.text}")
        elif output.output_type in ("execute_result", "display_data") and "text/plain" in output.data:
            if not {"image/png", "image/svg+xml"} & set(output.data):  # a figure's repr names its address
                parts.append(output.data["text/plain"])
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    text = "".join(parts)
    for regex, replace in SANITISE:
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the other code paths named here are x86's")
def test_a_reference_notebook_prints_the_same_on_other_code_paths(lesson, monkeypatch):
    for name, value in other_code_paths().items():
        monkeypatch.setenv(name, value)
    path = reference_notebook(lesson)
    committed = nbformat.read(path, as_version=4)
    run = nbformat.read(path, as_version=4)
    client = NotebookClient(run, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    cells = enumerate(zip(committed.cells, run.cells, strict=True))
    pairs = [(index, printed(old), printed(new)) for index, (old, new) in cells
             if old.cell_type == "code" and IGNORED not in old.source]
    differ = [f"cell {index}:\n  committed: {old!r}\n  now:       {new!r}" for index, old, new in pairs if old != new]
    assert not differ, (f"{lesson} prints rounding noise (run with {other_code_paths()}): print a bound or fewer "
                        "digits instead\n" + "\n".join(differ))
