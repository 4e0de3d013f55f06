"""Write docs/configuration.md: every option the course's own classes add, from their traitlets declarations.

Each option is declared once, with `help=`, on the class that uses it; this module lists them, as
nbgrader's documentation lists its own (`nbgrader --help-all`). Run it after changing an option:

    .venv/bin/python -m grader.authoring.config_reference

tests/policy/test_config_reference.py fails while docs/configuration.md differs from what it writes,
and when a class of grader/ declares an option that CLASSES leaves out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from traitlets import import_item

from grader.course import ROOT, nbgrader_config
from grader.grading.intake.lms.registry import settings

OUTPUT = ROOT / "docs" / "configuration.md"

# Every class of grader/ that declares an option (`.tag(config=True)`), in the order of the page.
CLASSES = (
    "grader.sandbox.limits.KernelLimits",
    "grader.pipeline.guarded_execute.GuardedExecute",
    "grader.sandbox.kernel.SandboxedKernelManager",
    "grader.pipeline.repair_cells.RepairCells",
    "grader.pipeline.inject_trusted_checks.InjectTrustedChecks",
    "grader.pipeline.safe_feedback_page.SafeFeedbackExporter",
    "grader.grading.running.supervisor.GradingProcesses",
    "grader.grading.policy.late.LatePolicy",
    "grader.grading.policy.late.LatePenalty",
    "grader.grading.outputs.lesson_reports.LmsImport",
    "grader.grading.outputs.similarity.SimilarityReport",
    "grader.student.originals.Originals",
    # then each LMS's own (Lms.settings of grader/grading/intake/lms/), in the LMSs' order
    *(f"{cls.__module__}.{cls.__name__}" for cls in settings()),
)

HEADER = """# Configuration reference

Every option the course's grader adds to nbgrader's, by class: set one as `c.<Class>.<option> = ...`
in `grader/nbgrader_config.py` (the course's values), or in the `nbgrader_config.py` of a folder
passed as `--course`. nbgrader's own options (`Execute.timeout`, `CourseDirectory.*`, ...) are in
[nbgrader's documentation](https://nbgrader.readthedocs.io/en/stable/configuration/config_options.html).

Generated from the classes' declarations by `python -m grader.authoring.config_reference`; do not
edit it by hand (tests/policy/test_config_reference.py compares it with what that writes).
"""


def shown(value: object) -> str:
    """`value` as Python source, with this checkout's folder written `<course>`, in a code span."""
    text = repr(value).replace(str(ROOT), "<course>")
    return f"`{text}`" if text else "``"


def section(path: str, course: dict) -> str:
    """The reference of the class at `path`: its docstring's summary and a table of its own options."""
    cls = import_item(path)
    summary = (cls.__doc__ or "").strip().splitlines()[0]
    rows = ["| option | default | the course sets | what it does |", "| --- | --- | --- | --- |"]
    for name, trait in sorted(cls.class_own_traits(config=True).items()):
        help_text = " ".join(trait.help.split()).replace("|", "\\|")
        value = shown(course[name]) if name in course else ""
        rows.append(f"| `{name}` | {shown(trait.default())} | {value} | {help_text} |")
    return f"## {cls.__name__}\n\n`{path}`: {summary}\n\n" + "\n".join(rows) + "\n"


def reference() -> str:
    """The text of docs/configuration.md."""
    config = nbgrader_config()
    sections = [section(path, dict(config[path.rsplit(".", 1)[1]])) for path in CLASSES]
    return HEADER + "".join(f"\n{text}" for text in sections)


def main(out: Path = OUTPUT) -> Path:
    """Write the reference to `out`; return it."""
    out.write_text(reference())
    return out


if __name__ == "__main__":
    print(f"wrote {main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)}")
