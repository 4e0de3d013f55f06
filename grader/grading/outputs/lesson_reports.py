"""What a run writes for the instructor besides the grades CSV and plot, all from the same grades rows.

After each run (grader.grading.autograde), next to `grades/<lesson>.csv`:

- `grades/<lesson>-overview.html`: per exercise and per student, what lost points, each student's
  points and lateness (grader.grading.outputs.overview), and the same in the terminal summary;
- `grades/<lesson>-canvas.csv` and `grades/<lesson>-moodle.csv`: the grades to import into Canvas's
  gradebook and Moodle's assignment (grader.grading.outputs.canvas_csv, grader.grading.outputs.moodle_csv);
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

from grader.grading.outputs import canvas_csv, feedback_bundle, moodle_csv, overview, similarity
from grader.grading.policy import grades
from grader.grading.policy.grades import Row
from grader.layout import Layout
from grader.pipeline.feedback_summary import FeedbackSummary, write_summary


def write(lesson: str, rows: Sequence[Row], points: dict[str, float], layout: Layout, *,
          before: dict | None, labels: dict[str, str] | None = None,
          canvas: canvas_csv.CanvasImport | None = None,
          similar: similarity.SimilarityReport | None = None) -> tuple[dict[str, Path], str]:
    """Write every report of `rows`; return them by name, and the text to add to the terminal summary
    (the overview, and every final total or exercise that changed since the run that wrote `before`)."""
    similar = similar or similarity.SimilarityReport()
    canvas = canvas or canvas_csv.CanvasImport()
    folder = layout.grades_csv(lesson).parent
    graded = [r for r in rows if r.status == "graded"]
    autograded = {r.student: layout.autograded_notebook(r.student, lesson) for r in graded}
    view = overview.build(lesson, rows, points, autograded, labels)
    lms_rows = [r for r in rows if r.person is None or r.person.on_roster or r.status != grades.NO_SUBMISSION]
    files = {"overview": overview.write_html(folder / f"{lesson}-overview.html", view),
             "canvas": canvas_csv.write(folder / f"{lesson}-canvas.csv", lesson, lms_rows, points,
                                        column=canvas.columns.get(lesson, ""), per_exercise=canvas.per_exercise),
             "moodle": moodle_csv.write(folder / f"{lesson}-moodle.csv", lms_rows, points)}
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
    text = [overview.terminal(view),
            f"  similar answers        {len(pairs):4d} pairs at {similar.threshold:.0%} or more (no grade changed)",
            grades.changes_table(lesson, grades.changes(before, rows), len(rows), first=before is None,
                                 names={r.student: r.name for r in rows if r.name})]
    return files, "\n".join(text)
