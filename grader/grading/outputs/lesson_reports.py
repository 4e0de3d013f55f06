"""What a run writes for the instructor besides the grades CSV and plot, all from the same grades rows.

After each run (grader.grading.autograde), next to `grades/<lesson>.csv`:

- `grades/<lesson>-overview.html`: per exercise and per student, what lost points, each student's
  points and lateness (grader.grading.outputs.overview), and the same in the terminal summary;
- `grades/<lesson>-canvas.csv` or `grades/<lesson>-moodle.csv`: the grades to import into Canvas's
  gradebook or Moodle's assignment (grader.grading.outputs.canvas_csv, grader.grading.outputs.moodle_csv),
  only the file of the LMS the students came from (their downloads or the roster); both when no
  LMS is known, or when `LmsImport.lms` asks for them (`lms_files`);
- in each graded student's feedback page, the summary: their name, points, lateness, penalty and
  final points (grader.pipeline.feedback_summary), rewritten on every run;
- `grades/<lesson>-feedback/` and `.zip`: each student's feedback page named for upload
  (grader.grading.outputs.feedback_bundle);
- `grades/<lesson>-similarity.html`: pairs of submissions whose answers match
  (grader.grading.outputs.similarity); it changes no grade;
- `grades/<lesson>.json`: these grades, so that the next run can say what changed and why
  (grader.grading.policy.grades.changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from traitlets import List, Unicode
from traitlets.config import Configurable

from grader.errors import UsageError
from grader.grading.outputs import canvas_csv, feedback_bundle, moodle_csv, overview, similarity
from grader.grading.policy import grades
from grader.grading.policy.grades import Row
from grader.layout import Layout
from grader.pipeline.feedback_summary import FeedbackSummary, write_summary

LMS_FILES = ("canvas", "moodle")


class LmsImport(Configurable):
    """Which LMS import files a run writes."""

    lms = List(Unicode(), help="the LMS import files to write, of 'canvas' and 'moodle' (default: the file of the "
                               "LMS the students came from, by their downloads or the roster; both when none is "
                               "known)").tag(config=True)


def lms_files(rows: Sequence[Row], asked: Sequence[str] = ()) -> list[str]:
    """The LMS import files to write for `rows`: those `asked` for; else those of the LMSs the students came
    from (Person.lms); else, when none is known (the hub, make-submit files, a course roster), both."""
    if asked:
        unknown = sorted(set(asked) - set(LMS_FILES))
        if unknown:
            raise UsageError(f"c.LmsImport.lms names {', '.join(unknown)}: it takes {' and '.join(LMS_FILES)}")
        return [name for name in LMS_FILES if name in asked]
    known = {r.person.lms for r in rows if r.person and r.person.lms}
    return [name for name in LMS_FILES if name in known] or list(LMS_FILES)


def write(lesson: str, rows: Sequence[Row], points: dict[str, float], layout: Layout, *,
          before: dict | None, labels: dict[str, str] | None = None,
          canvas: canvas_csv.CanvasImport | None = None, assignments: Sequence[str] = (),
          lms: Sequence[str] = (),
          similar: similarity.SimilarityReport | None = None) -> tuple[dict[str, Path], str]:
    """Write every report of `rows`; return them by name, and the text to add to the terminal summary
    (the overview, every final total or exercise that changed since the run that wrote `before`, and a
    warning when the Canvas import column is no assignment of Canvas's export, `assignments`). `lms`:
    the LMS import files asked for (LmsImport.lms)."""
    similar = similar or similarity.SimilarityReport()
    canvas = canvas or canvas_csv.CanvasImport()
    folder = layout.grades_csv(lesson).parent
    graded = [r for r in rows if r.status == "graded"]
    autograded = {r.student: layout.autograded_notebook(r.student, lesson) for r in graded}
    view = overview.build(lesson, rows, points, autograded, labels)
    lms_rows = [r for r in rows if r.person is None or r.person.on_roster or r.status != grades.NO_SUBMISSION]
    files = {"overview": overview.write_html(folder / f"{lesson}-overview.html", view)}
    header, warning = canvas_csv.column(lesson, canvas.columns.get(lesson, ""), assignments)
    wanted = lms_files(rows, lms)
    for name in LMS_FILES:
        path = folder / f"{lesson}-{name}.csv"
        if name not in wanted:
            path.unlink(missing_ok=True)  # no file of an earlier run may pass for this one's
        elif name == "canvas":
            files[name] = canvas_csv.write(path, lesson, lms_rows, points, column=header,
                                           per_exercise=canvas.per_exercise)
        else:
            files[name] = moodle_csv.write(path, lms_rows, points)
    warning = warning if "canvas" in wanted else ""
    for row in graded:
        page = layout.feedback_page(row.student, lesson)
        if page.is_file() and row.total is not None and row.final is not None:
            write_summary(page, FeedbackSummary(row.name or row.student, row.student, lesson, row.total,
                                                sum(points.values()), row.lateness.status(), row.lateness.penalty,
                                                row.final))
    bundle = feedback_bundle.write(layout.feedback_bundle(lesson), lesson, rows,
                                   lambda student: layout.feedback_page(student, lesson))
    if bundle is not None:
        files["feedback zip"] = bundle
    submitted = {r.student: layout.submitted_notebook(r.student, lesson) for r in rows if r.result is not None}
    pairs = similarity.compare(submitted, layout.release_notebook(lesson), threshold=similar.threshold,
                               min_tokens=similar.min_tokens)
    files["similar"] = similarity.write_html(folder / f"{lesson}-similarity.html", lesson, pairs,
                                             compared=len(submitted), threshold=similar.threshold)
    grades.write_snapshot(layout.grades_snapshot(lesson), rows)
    text = [*([warning] if warning else []), overview.terminal(view),
            f"  similar answers        {len(pairs):4d} pairs at {similar.threshold:.0%} or more (no grade changed)",
            grades.changes_table(lesson, grades.changes(before, rows), len(rows), first=before is None,
                                 names={r.student: r.name for r in rows if r.name})]
    return files, "\n".join(text)
