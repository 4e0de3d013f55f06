"""What a run writes for the instructor besides the grades CSV and plot, all from the same grades rows.

After each run (grader.grading.autograde), next to `grades/<lesson>.csv`:

- `grades/<lesson>-overview.html`: per exercise and per student, what lost points, each student's
  points and lateness (grader.grading.outputs.overview), and the same in the terminal summary;
- `grades/<lesson>-<lms>.csv` (`-canvas`, `-moodle`, `-blackboard`): the grades as that LMS's import
  reads them, written by the LMS's module (grader.grading.intake.lms: `Lms.write_import`), only the file
  of the LMS the students came from (their downloads or the roster); every LMS's when none is known, or
  those `LmsImport.lms` asks for (`lms_files`);
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
from traitlets.config import Config, Configurable

from grader.errors import UsageError
from grader.grading.intake.lms import registry
from grader.grading.intake.lms.base import GradeLine
from grader.grading.outputs import feedback_bundle, overview, similarity
from grader.grading.policy import grades
from grader.grading.policy.grades import Row
from grader.layout import Layout
from grader.pipeline.feedback_summary import FeedbackSummary, write_summary


class LmsImport(Configurable):
    """Which LMS import files a run writes."""

    lms = List(Unicode(), help="the LMS import files to write, by the LMSs' names (each module's `name` in "
                               "grader/grading/intake/lms/, e.g. 'canvas'; default: the file of the LMS the students "
                               "came from, by their downloads or the roster; every LMS's when none is known)"
               ).tag(config=True)


def lms_files(rows: Sequence[Row], asked: Sequence[str] = ()) -> list[str]:
    """The LMS import files to write for `rows`: those `asked` for; else those of the LMSs the students came
    from (Person.lms); else, when none is known (the hub, make-submit files, a course roster), every LMS's."""
    names = [lms.name for lms in registry.importers()]
    if asked:
        unknown = sorted(set(asked) - set(names))
        if unknown:
            raise UsageError(f"c.LmsImport.lms names {', '.join(unknown)}: it takes {', '.join(names)}")
        return [name for name in names if name in asked]
    known = {r.person.lms for r in rows if r.person and r.person.lms}
    return [name for name in names if name in known] or names


def grade_line(row: Row) -> GradeLine:
    """What an LMS's import file needs of `row`."""
    person = row.person
    graded = row.status == "graded"
    return GradeLine(row.student, row.name or row.student, row.final, lms=person.lms if person else "",
                     lms_id=person.lms_id if person else "", email=person.email if person else "",
                     section=person.section if person else "", sis_user_id=person.sis_user_id if person else "",
                     sis_login_id=person.sis_login_id if person else "",
                     scores={e: (s if graded else None) for e, s in row.scores.items()},
                     time=row.submission.time if row.submission else None, lateness=row.lateness.status())


def write(lesson: str, rows: Sequence[Row], points: dict[str, float], layout: Layout, *,
          before: dict | None, labels: dict[str, str] | None = None, config: Config | None = None,
          roster_lms: str = "", assignments: Sequence[str] = (), lms: Sequence[str] = (),
          similar: similarity.SimilarityReport | None = None) -> tuple[dict[str, Path], str]:
    """Write every report of `rows`; return them by name, and the text to add to the terminal summary
    (the overview, every final total or exercise that changed since the run that wrote `before`, and the
    LMS import files' warnings, e.g. a column that is none of the grade columns `assignments` of the
    export of `roster_lms` given as the roster). `lms`: the LMS import files asked for (LmsImport.lms);
    `config`: the course's configuration, for each LMS's own settings."""
    similar = similar or similarity.SimilarityReport()
    folder = layout.grades_csv(lesson).parent
    graded = [r for r in rows if r.status == "graded"]
    autograded = {r.student: layout.autograded_notebook(r.student, lesson) for r in graded}
    view = overview.build(lesson, rows, points, autograded, labels)
    lms_rows = [r for r in rows if r.person is None or r.person.on_roster or r.status != grades.NO_SUBMISSION]
    files = {"overview": overview.write_html(folder / f"{lesson}-overview.html", view)}
    wanted, warnings, lines = lms_files(rows, lms), [], [grade_line(r) for r in lms_rows]
    for importer in registry.importers(config):
        path = folder / f"{lesson}-{importer.name}.csv"
        if importer.name not in wanted:
            path.unlink(missing_ok=True)  # no file of an earlier run may pass for this one's
            continue
        warning = importer.write_import(path, lesson, lines, points,
                                        assignments=assignments if importer.name == roster_lms else ())
        files[importer.name] = path
        warnings += [warning] * bool(warning)
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
    text = [*warnings, overview.terminal(view),
            f"  similar answers        {len(pairs):4d} pairs at {similar.threshold:.0%} or more (no grade changed)",
            grades.changes_table(lesson, grades.changes(before, rows), len(rows), first=before is None,
                                 names={r.student: r.name for r in rows if r.name})]
    return files, "\n".join(text)
