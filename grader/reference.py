"""Re-execute the reference notebooks in solutions/ in place, from their paired text sources."""

from __future__ import annotations

import argparse
import subprocess
import sys

import nbformat
from nbclient import NotebookClient

from grader.course import check_lessons, missing_requirements, reference_notebook, source_text


def main(*, lessons: list[str] | None = None, timeout: int = 600) -> list[str]:
    """For each lesson: take cell inputs from `solutions/<id>.py`, run every cell, save outputs.

    jupytext's --update keeps the notebook's metadata; nbclient runs the notebook in its own
    folder with the `python3` kernel and records no timing metadata, so re-running an unchanged
    lesson changes nothing but the outputs of cells marked as volatile.
    """
    lessons = check_lessons(lessons)
    done = []
    for lesson in lessons:
        missing = missing_requirements(lesson)
        if missing:
            install = " and ".join(sorted(set(missing.values())))
            print(f"skipped {lesson}: it needs {', '.join(missing)}; run `{install}`")
            continue
        notebook = reference_notebook(lesson)
        notebook.parent.mkdir(exist_ok=True)
        update = ["--update"] if notebook.exists() else []  # keep existing metadata and outputs
        subprocess.run([sys.executable, "-m", "jupytext", "--quiet", *update, "--to", "ipynb",
                        "--output", str(notebook), str(source_text(lesson))], check=True)
        nb = nbformat.read(notebook, as_version=4)
        # No timing metadata and no widget state: both change on every run (widget model ids are
        # random), and widget state would also be copied into the student release. Streams are
        # coalesced so that a cell's printout is stored as one piece however the kernel flushed it.
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                store_widget_state=False, coalesce_streams=True,
                                resources={"metadata": {"path": str(notebook.parent)}})
        client.execute()
        nbformat.write(nb, notebook)
        subprocess.run([sys.executable, "-m", "jupytext", "--quiet", "--sync", str(notebook)], check=True)
        print(f"executed {notebook.relative_to(notebook.parents[1])}")
        done.append(lesson)
    return done


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default: 600)")


def run(args: argparse.Namespace) -> None:
    main(lessons=args.lessons, timeout=args.timeout)
