"""`python -m grader` with some of the grader's optimisations switched off, for the throughput benchmark.

    .venv/bin/python -m benchmarks.switches <switch>[,<switch>...] autograde <lesson> ...

Each switch replaces one optimisation by the plain behaviour it stands in for, in this process and
the grading processes it forks, then runs the grader's command line as usual; `none` switches
nothing off. benchmarks/autograde_throughput.py runs the same batch with and without each one
(`--switches`) to price it. The grading code knows nothing of this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def _soup() -> None:
    """The feedback page goes through HTMLExporter's own from_notebook_node (its BeautifulSoup pass)."""
    from nbconvert.exporters import HTMLExporter

    from grader.pipeline import safe_feedback_page

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = dict(resources or {})
        resources["nbgrader_exercises"] = safe_feedback_page.exercises(nb)
        resources.setdefault("nbgrader", {"notebook": "", "score": 0, "max_score": 0, "late_penalty": 0})
        output, resources = HTMLExporter.from_notebook_node(self, nb, resources, **kw)
        return safe_feedback_page.harden(output, max_bytes=self.max_bytes,
                                         scores=safe_feedback_page._scores(resources)), resources

    safe_feedback_page.SafeFeedbackExporter.from_notebook_node = from_notebook_node


def _figures() -> None:
    """Grading kernels draw their figures, as stock nbgrader's do (no `InlineBackend.figure_formats=[]`)."""
    from nbclient.util import run_sync

    from grader.pipeline.guarded_execute import GuardedExecute

    configured = GuardedExecute.async_start_new_kernel

    async def async_start_new_kernel(self, **kwargs):  # not in __init__: nbgrader reloads the configuration after it
        self.shortcut_arguments = [arg for arg in self.shortcut_arguments if "figure_formats" not in arg]
        return await configured(self, **kwargs)

    GuardedExecute.async_start_new_kernel = async_start_new_kernel
    GuardedExecute.start_new_kernel = run_sync(async_start_new_kernel)


SWITCHES: dict[str, Callable[[], None]] = {
    "soup": _soup,
    "figures": _figures,
}


def main(argv: list[str]) -> None:
    names, *command = argv
    for name in filter(None, names.split(",")):
        if name != "none":
            SWITCHES[name]()
    from grader.__main__ import main as grader

    grader(command)


if __name__ == "__main__":
    main(sys.argv[1:])
