"""Grade a lesson's submissions in parallel: collect, autograde, feedback, grades CSV and plot."""

from __future__ import annotations

import argparse
import math
import sys
import time
import uuid
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

import nbformat
from nbgrader.api import MissingEntry
from nbgrader.coursedir import CourseDirectory

from grader import cell_roles
from grader.course import ROOT, nbgrader_config, select_lessons
from grader.errors import CannotGradeSafely, NotReleased
from grader.gradebook import open_gradebook, require_course_id
from grader.grading.intake.collect import Skipped, collect
from grader.grading.intake.enrolment import enrol
from grader.grading.intake.lms.registry import lmss
from grader.grading.intake.people import registry
from grader.grading.intake.roster import Roster
from grader.grading.outputs import gradelog, lesson_reports, report
from grader.grading.outputs.lesson_reports import LmsImport
from grader.grading.outputs.similarity import SimilarityReport
from grader.grading.policy import grades, late, overrides
from grader.grading.running.failure_detail import traceback_of
from grader.grading.running.gradebook_check import check_gradebook
from grader.grading.running.jobs import Job, Result
from grader.grading.running.preflight import preflight
from grader.grading.running.scores import add_scores, has_grades
from grader.grading.running.supervisor import GradingProcesses, default_workers, supervise
from grader.grading.running.worker import grade
from grader.layout import Layout
from grader.pipeline.guarded_execute import GuardedExecute
from grader.sandbox.bwrap import SandboxUnavailable, probe


@dataclass
class Batch:
    """Everything one run produced."""

    lesson: str
    results: list[Result]
    skipped: list[Skipped]
    grades: Path  # the grades CSV
    plot: Path | None  # the score distribution PNG (None when nothing was graded)
    seconds: float
    rows: list[grades.Row]  # the lesson's grades, every student (grader.grading.policy.grades)


def main(*, lesson: str, course: Path = ROOT, source: Path | None = None, roster: Path | None = None,
         regrade: bool = False, workers: int | None = None,
         force: bool = False, timeout: int | None = None, memory_limit: int | None = None,
         unsafe_no_sandbox: bool = False, job_timeout: float | None = None, download_format: str | None = None,
         replace_edits: bool = False, now: datetime | None = None,
         executor: Executor | None = None, progress: TextIO = sys.stderr, out: TextIO = sys.stdout) -> Batch:
    """Grade every submission of `lesson`, then rebuild every output of the lesson from all the term's facts.

    The facts (grader.grading.policy.grades): the notebooks downloaded from an LMS to `source` (a folder or
    a .zip; grader.grading.intake.collect keeps every one as an attempt) and those in nbgrader's submitted
    folder; the people registry with the roster (`roster` replaces the one remembered;
    grader.grading.intake.people); the late policy as configured now; the instructor's overrides and hand
    edits. Every run writes the grades CSV, the LMS import files, the overview, the feedback bundle
    and the similarity report for all of them, and lists every total that changed since the last
    run and why; a policy change needs no kernel.

    Each submission is graded by `grader.grading.running.worker.grade`, each kernel in the sandbox
    (grader.sandbox): by default in `workers` grading processes of this machine (default:
    GradingProcesses.workers, one more than the cores; grader.grading.running.supervisor), each submission
    stopped after `job_timeout` seconds (default: GuardedExecute.notebook_timeout plus
    GradingProcesses.job_timeout_margin) so that none can hold up the batch. Any
    `concurrent.futures.Executor` whose workers are processes that see this course's files and
    gradebook can be passed instead, e.g. a Dask cluster's `Client(...).get_executor()`; it is not
    shut down here.

    Where the sandbox cannot start, grading is refused with the reason, unless
    `unsafe_no_sandbox`: kernels then run with the grader's own permissions, and the summary,
    the CSV and every feedback page say so.

    A submission already graded, with feedback, since it last changed is not run again unless
    `force` or `regrade` (which re-runs every kernel). `timeout` (seconds per cell) and
    `memory_limit` (bytes per kernel) override the course's nbgrader configuration.
    """
    [lesson] = select_lessons([lesson])
    started = time.monotonic()
    config = nbgrader_config(course)
    layout = Layout.of(config)  # grading data left in grader/state/: refused here, before anything runs
    if not unsafe_no_sandbox:
        try:
            probe()
        except SandboxUnavailable as error:
            raise CannotGradeSafely(f"cannot grade safely: {error}.\nGrading runs every submission in a sandbox; to "
                                    "grade without it anyway (the kernels can then change grades), pass "
                                    "--unsafe-no-sandbox.") from None
    preflight(course, lesson, config, sandbox=not unsafe_no_sandbox)  # a broken spec or sandbox: refused here
    coursedir = CourseDirectory(config=config)
    release = layout.release_notebook(lesson)
    require_course_id(coursedir)
    if not release.is_file():
        raise NotReleased(f"{release} is missing: run `make release LESSON={lesson}` first")
    released = nbformat.read(release, as_version=4)
    points, labels = cell_roles.test_points(released), cell_roles.exercise_labels(released)

    table = Roster.read(roster) if roster is not None else None
    # The gradebook, opened once for the batch: checked, the lesson looked up, the students enrolled, which
    # of them already have grades, and each submission's points as its result comes in (no worker opens it).
    with open_gradebook(coursedir.db_url, coursedir.course_id) as gradebook:
        check_gradebook(gradebook)
        try:
            gradebook.find_assignment(lesson)
        except MissingEntry:
            raise NotReleased(f"{lesson} is not in the gradebook: run `make release LESSON={lesson}` first") from None
        with registry(layout.people) as people:
            roster_changes = people.apply_roster(table) if table is not None else None
            collected = collect(lesson, layout.submitted, layout.attempts, source, people=people, now=now,
                                config=config, forced=download_format,
                                replace_edits=replace_edits)
        enrol(gradebook, collected.students, {p.id: (p.name, p.email) for p in people.persons.values()})
        ungraded = {student for student in collected.students if not has_grades(gradebook, lesson, student)}

        jobs = make_jobs(course, lesson, collected.students, force=force or regrade, ungraded=ungraded,
                         timeout=timeout, memory_limit=memory_limit, sandbox=not unsafe_no_sandbox)
        processes = GradingProcesses(config=config)
        if job_timeout is None:
            notebook_limit = GuardedExecute(config=config).notebook_timeout
            job_timeout = notebook_limit + processes.job_timeout_margin if notebook_limit else math.inf
        workers = max(1, min(workers or processes.workers or default_workers(), len(jobs) or 1))
        log = layout.log(lesson)
        log.parent.mkdir(parents=True, exist_ok=True)
        bar = report.Progress(len(jobs), points, stream=progress, label=lesson)

        def done(result: Result) -> None:
            add_scores(gradebook, lesson, result, points)
            bar.update(result)
            gradelog.append(log, lesson, result, points)

        if not jobs:
            results = []
        elif executor is None:
            results = supervise(jobs, workers=workers, job_timeout=job_timeout, log=log, done=done,
                                settings=processes)
        else:
            results = _run(jobs, executor, done)
        bar.close()

    rows = grades.build(lesson, results, points, people=people, submissions=collected.submissions,
                        policy=late.LatePolicy(config=config), penalty=late.LatePenalty(config=config),
                        overrides=overrides.load(layout.overrides).get(lesson, {}))
    before = grades.read_snapshot(layout.grades_snapshot(lesson))
    csv_path = report.write_csv(layout.grades_csv(lesson), rows, points)
    graded = any(o.status == "graded" for o in results)
    plot = layout.grades_plot(lesson)
    if graded:
        report.plot_scores(plot, results, points, lesson)
    else:
        plot.unlink(missing_ok=True)  # no plot of an earlier batch may pass for this one's
    written, details = lesson_reports.write(lesson, rows, points, layout, before=before, labels=labels,
                                            config=config, roster_lms=people.roster_lms, assignments=people.assignments,
                                            lms=LmsImport(config=config).lms, similar=SimilarityReport(config=config))
    files = {"grades": csv_path, **({"plot": plot} if graded else {}), **written,
             "feedback": layout.feedback / "<student>" / lesson, "log": log}
    seconds = time.monotonic() - started
    notes = [*(roster_changes.lines() if roster_changes else []),
             *([f"download format: {collected.format}"] if collected.format else [])]
    print(report.summary(lesson, results, collected.skipped, seconds=seconds, workers=None if executor else workers,
                         files=files, unsafe=unsafe_no_sandbox, collect_notes=collected.review, notes=notes,
                         names={r.student: r.name for r in rows if r.name}),
          file=out, flush=True)
    print(details, file=out, flush=True)
    return Batch(lesson, results, collected.skipped, csv_path, plot if graded else None, seconds, rows)


def make_jobs(course: Path, lesson: str, students: list[str], *, force: bool = False,
              ungraded: set[str] = frozenset(), **options) -> list[Job]:
    """One Job per student, with `options` (Job's fields), all marked with a run id of their own (Job.run);
    forced (run again even when graded since it changed) when `force`, or for the students `ungraded` (whose
    grades the gradebook does not hold)."""
    run = uuid.uuid4().hex
    return [Job(str(Path(course).resolve()), lesson, student, force=force or student in ungraded, run=run, **options)
            for student in students]


def _run(jobs: list[Job], executor: Executor, done) -> list[Result]:
    """Grade `jobs` on an executor passed in (a cluster's), calling `done(result)` as each finishes."""
    results = []
    futures = {executor.submit(grade, job): job for job in jobs}
    for future in as_completed(futures):
        job = futures[future]
        try:
            result = future.result()
        except Exception as exc:  # the executor or its worker failed, not the grading
            result = Result(job.student, "failed", reason=f"worker failed: {type(exc).__name__}: {exc}",
                            detail=traceback_of(exc))
        results.append(result)
        done(result)
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lesson", help="lesson id, e.g. 03-parallel-heads")
    lms = [known for known in lmss() if not known.fallback]
    exports = ", ".join(k.title for k in lms if k.rosters)
    parser.add_argument("--source", type=Path,
                        help=f"folder or .zip downloaded from the LMS as it came ({', '.join(k.title for k in lms)}), "
                             "or make-submit files <lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb")
    parser.add_argument("--roster", type=Path,
                        help=f"the course's roster, as the LMS exports it ({exports}) "
                             "or a CSV with the columns id and name: it replaces "
                             "the roster remembered from earlier runs")
    parser.add_argument("--format", dest="download_format",
                        help=f"the download's format ({', '.join(lms.name for lms in lmss())}) when its files fit "
                             "more than one")
    parser.add_argument("--replace-edits", action="store_true",
                        help="grade a newer attempt instead of a submission edited by hand (the edit is kept aside)")
    parser.add_argument("--workers", type=int, help="grading processes (default: one more than the cores)")
    parser.add_argument("--force", action="store_true", help="regrade submissions already graded")
    parser.add_argument("--regrade", action="store_true",
                        help="run every stored submission's kernel again (as --force); every run prints each "
                             "score that changed since the last run, and why")
    parser.add_argument("--timeout", type=int, help="seconds each cell may run (default: nbgrader_config.py's)")
    parser.add_argument("--memory-limit", type=float, metavar="GIB",
                        help="GiB of address space per kernel (default: nbgrader_config.py's)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="grade without the sandbox where it cannot start (the kernels can then change grades); "
                             "the summary, the CSV and the feedback say so")
    parser.add_argument("--course", type=Path, default=ROOT,
                        help="folder whose nbgrader_config.py to use (default: this repository)")


def run(args: argparse.Namespace) -> None:
    memory = None if args.memory_limit is None else int(args.memory_limit * 1024**3)
    main(lesson=args.lesson, course=args.course, source=args.source, roster=args.roster, regrade=args.regrade,
         workers=args.workers, force=args.force, download_format=args.download_format,
         replace_edits=args.replace_edits,
         timeout=args.timeout, memory_limit=memory, unsafe_no_sandbox=args.unsafe_no_sandbox)
