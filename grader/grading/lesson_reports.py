"""What a grading batch writes for the instructor besides the grades CSV and plot.

After each batch (grader.grading.autograde), next to `grades/<lesson>.csv`:

- `grades/<lesson>-overview.html`: per exercise and per student, what lost points
  (grader.grading.overview), and the same in the terminal summary;
- `grades/<lesson>-canvas.csv`: the grades in Canvas's gradebook import format (grader.grading.canvas_csv);
- `grades/<lesson>-similarity.html`: pairs of submissions whose answers match
  (grader.grading.similarity); it changes no grade;
- with a regrade, the table of every score that changed (grader.grading.regrade).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.grading import canvas_csv, overview, regrade, similarity
from grader.grading.jobs import Result
from grader.grading.late import Lateness
from grader.grading.lms import Roster
from grader.layout import Layout


def write(lesson: str, results: Sequence[Result], points: dict[str, float], layout: Layout, *,
          lateness: dict[str, Lateness], roster: Roster | None = None,
          before: dict[str, dict[str, float | None]] | None = None,
          similar: similarity.SimilarityReport | None = None) -> tuple[dict[str, Path], str]:
    """Write the overview page, the Canvas CSV and the similarity report; return them by name, and
    the text to add to the terminal summary (the overview, and with `before` the regrade's changes).

    `similar` says which pairs the similarity report lists (default: SimilarityReport's defaults)."""
    similar = similar or similarity.SimilarityReport()
    grades = layout.grades_csv(lesson).parent
    autograded = {r.student: layout.autograded_notebook(r.student, lesson) for r in results}
    view = overview.build(lesson, results, points, autograded, lateness)
    files = {"overview": overview.write_html(grades / f"{lesson}-overview.html", view),
             "canvas": canvas_csv.write(grades / f"{lesson}-canvas.csv", lesson, results, points,
                                        lateness=lateness, roster=roster)}
    submitted = {r.student: layout.submitted_notebook(r.student, lesson) for r in results}
    pairs = similarity.compare(submitted, layout.release_notebook(lesson), threshold=similar.threshold,
                               min_tokens=similar.min_tokens)
    files["similar"] = similarity.write_html(grades / f"{lesson}-similarity.html", lesson, pairs,
                                             compared=len(submitted), threshold=similar.threshold)
    text = [overview.terminal(view),
            f"  similar answers        {len(pairs):4d} pairs at {similar.threshold:.0%} or more (no grade changed)"]
    if before is not None:
        text.append(regrade.table(lesson, regrade.changes(before, results, points), len(results)))
    return files, "\n".join(text)
