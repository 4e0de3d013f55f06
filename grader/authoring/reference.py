"""Re-execute the reference notebooks in solutions/ in place, from their paired text sources."""

from __future__ import annotations

import argparse

import jupytext
import nbformat
from nbclient import NotebookClient

from grader.course import reference_notebook, select_lessons, source_text
from grader.extras import missing_extras


def updated_from_text(lesson: str) -> nbformat.NotebookNode:
    """The reference notebook with its cells taken from `solutions/<id>.py`.

    The notebook's own metadata is kept (jupytext's --update), so is the output of every cell
    whose input did not change; a lesson without a notebook yet starts from the text alone.
    """
    text = jupytext.read(source_text(lesson))
    notebook = reference_notebook(lesson)
    if not notebook.exists():
        return text
    return jupytext.combine.combine_inputs_with_outputs(text, nbformat.read(notebook, as_version=4))


def execute(nb: nbformat.NotebookNode, folder, *, timeout: int) -> None:
    """Run every cell of `nb` in a fresh `python3` kernel in `folder`, storing outputs in `nb`.

    No timing metadata and no widget state: both change on every run (widget model ids are
    random), and widget state would also be copied into the student release. Streams are
    coalesced so that a cell's printout is stored as one piece however the kernel flushed it.
    """
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, store_widget_state=False,
                   coalesce_streams=True, resources={"metadata": {"path": str(folder)}}).execute()


def main(*, lessons: list[str] | None = None, timeout: int = 600) -> list[str]:
    """For each lesson: take cell inputs from `solutions/<id>.py`, run every cell, save the notebook."""
    done = []
    for lesson in select_lessons(lessons):
        missing = missing_extras(lesson)
        if missing:
            print(f"skipped {lesson}: it needs {', '.join(e.name for e in missing)}; "
                  f"run `{' and '.join(e.install for e in missing)}`")
            continue
        notebook = reference_notebook(lesson)
        notebook.parent.mkdir(exist_ok=True)
        nb = updated_from_text(lesson)
        execute(nb, notebook.parent, timeout=timeout)
        jupytext.write(nb, notebook)
        print(f"executed {notebook.relative_to(notebook.parents[1])}")
        done.append(lesson)
    return done


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default: 600)")


def run(args: argparse.Namespace) -> None:
    main(lessons=args.lessons, timeout=args.timeout)
