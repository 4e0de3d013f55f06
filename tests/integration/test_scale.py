"""Grading at scale, end to end: a real Dask cluster's executor, and a real PostgreSQL gradebook.

The same submissions of one lesson (the reference answers and two common mistakes, from
tests/fixtures/<lesson>/submissions.toml) are graded in separate throw-away courses: with the
default local supervisor and SQLite (the baseline), on a Dask `LocalCluster` of two worker
processes with one thread each, and into a gradebook on a PostgreSQL server that the test starts
itself in a temporary folder, listening only on a unix socket there. Every path must give the
baseline's score for every test cell of every submission, and those scores must differ between
the submissions, so that a path that graded nothing, or graded everything alike, fails.

The extras (grader.extras.EXTRAS): "dask" (`make scale`) and "postgres" (`make scale`, and
PostgreSQL's server programs from `apt-get install postgresql`). As root, PostgreSQL refuses to
run: its programs then run as Debian's `postgres` user (or nobody), which owns the folder.
"""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nbgrader.api import Gradebook, MissingEntry

from grader.extras import EXTRAS
from grader.grading.autograde import main as autograde
from tests.support import Course, build, expected_scores, make_course, variants

pytestmark = pytest.mark.same_verdicts  # the same scores on a Dask cluster and in PostgreSQL

LESSON = "03-parallel-heads"
# student id -> the fixture of submissions.toml handed in (ids have no hyphen: grader.grading.intake.collect)
STUDENTS = {"reference": "reference", "not_scaled": "mistake-scores-not-scaled",
            "no_transpose": "mistake-split-without-transpose"}
CELL_TIMEOUT = 30  # seconds per cell, as in grading

Scores = dict[str, dict[str, float | None]]  # student -> test cell grade_id -> points


def submit(course: Course) -> None:
    """Hand in STUDENTS' notebooks, built from this course's own release."""
    fixtures = {v.name: v for v in variants(LESSON)}
    course.submit(LESSON, {student: build(LESSON, course.release(LESSON), fixtures[name])
                           for student, name in STUDENTS.items()})


def grade(course: Course, *, rerun: set[str] | None = None, **options) -> Scores:
    """Grade the course's batch through grader.grading.autograde.main; every submission must be graded.

    Every submission is graded anew, or with `rerun`, only those students' and the rest are not run again.
    """
    batch = autograde(lesson=LESSON, course=course.root, force=rerun is None, progress=io.StringIO(),
                      out=io.StringIO(), **options)
    failed = {r.student: r.reason for r in batch.results if r.status != "graded"}
    assert not failed and len(batch.results) == len(STUDENTS), failed
    if rerun is not None:
        assert {r.student for r in batch.results if not r.cached} == rerun
    return {r.student: r.scores for r in batch.results}


def stored_scores(course: Course) -> Scores:
    """The scores as the course's gradebook holds them, read back from the database itself."""
    with Gradebook(course.db_url, course.course_id) as gradebook:
        return {student: {g.name: g.score for g in gradebook.find_submission_notebook(LESSON, LESSON, student).grades}
                for student in STUDENTS}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Scores:
    """The batch graded the default way: the local supervisor, two processes, SQLite."""
    course = make_course(tmp_path_factory.mktemp("local") / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    submit(course)
    scores = grade(course, workers=2)
    assert stored_scores(course) == scores
    release = course.release(LESSON)
    fixtures = {v.name: v for v in variants(LESSON)}
    expected = {student: expected_scores(release, fixtures[name]) for student, name in STUDENTS.items()}
    assert scores == expected, "the local grader no longer gives the fixtures' scores"
    totals = {student: sum(points.values()) for student, points in scores.items()}
    assert len(set(totals.values())) == len(STUDENTS), f"the submissions must score differently: {totals}"
    return scores


# ---------------------------------------------------------------- Dask

@pytest.fixture(scope="module")
def cluster():
    """A Dask LocalCluster of two worker processes with one thread each, and a client of it."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as local:
        with distributed.Client(local) as client:
            client.wait_for_workers(2, timeout=120)
            yield client


@pytest.mark.needs("dask")
def test_a_dask_cluster_grades_the_batch_as_the_local_supervisor_does(baseline, cluster, tmp_path):
    import distributed

    course = make_course(tmp_path / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    submit(course)
    with distributed.get_task_stream(cluster) as stream:
        scores = grade(course, executor=cluster.get_executor())
    assert scores == baseline
    assert stored_scores(course) == baseline
    graded_on = {task["worker"] for task in stream.data if task["key"].startswith("grade-")}
    workers = set(cluster.scheduler_info()["workers"])
    assert graded_on == workers, f"the jobs ran on {graded_on}, not on both workers {workers}"

    # A new hand-in, graded on the same cluster: only it runs again, and its new score is kept.
    fixtures = {v.name: v for v in variants(LESSON)}
    course.submit(LESSON, {"not_scaled": build(LESSON, course.release(LESSON), fixtures["reference"])})
    assert baseline["not_scaled"] != baseline["reference"]
    assert grade(course, rerun={"not_scaled"}, executor=cluster.get_executor()) == baseline | {
        "not_scaled": baseline["reference"]}


# ---------------------------------------------------------------- PostgreSQL

@dataclass(frozen=True)
class PostgresServer:
    folder: Path  # holds the data folder, the server's log and its unix socket
    user: str  # the database superuser

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@/{database}?host={self.folder}"


def _as_server_user() -> list[str]:
    """The command prefix that runs PostgreSQL's programs as an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        user = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of its own, in a temporary folder, on a unix socket only; always stopped."""
    import psycopg

    extra = EXTRAS["postgres"]
    initdb, pg_ctl = extra.executable("initdb"), extra.executable()
    prefix = _as_server_user()
    # Straight under the temporary folder: pytest's own folders are closed to other users.
    folder = Path(tempfile.mkdtemp(prefix="grader-pg-"))
    if prefix:
        uid, gid = (int(arg.split("=")[1]) for arg in prefix[1:3])
        os.chown(folder, uid, gid)
    data, log = folder / "data", folder / "server.log"
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "TZ": "UTC"}

    def run(*command: str) -> None:
        done = subprocess.run([*prefix, *command], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}" + (
            log.read_text() if log.is_file() else "")

    try:
        run(initdb, "--pgdata", str(data), "--username", "grader", "--auth", "trust", "--encoding", "UTF8",
            "--no-sync")
        run(pg_ctl, "--pgdata", str(data), "--log", str(log), "--wait", "--options",
            f"-c listen_addresses='' -c unix_socket_directories='{folder}' -c fsync=off", "start")
        try:
            server = PostgresServer(folder, "grader")
            with psycopg.connect(host=str(folder), user=server.user, dbname="postgres", autocommit=True) as db:
                db.execute("CREATE DATABASE gradebook")
            yield server
        finally:
            run(pg_ctl, "--pgdata", str(data), "--mode", "fast", "--wait", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def postgres_course(postgres, tmp_path_factory) -> Course:
    """A course whose gradebook is the server's `gradebook` database, with the lesson released into it."""
    course = make_course(tmp_path_factory.mktemp("postgres") / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON],
                         db_url=postgres.url("gradebook"), course_id="attention")
    assert course.db_url.startswith("postgresql+psycopg://")
    with Gradebook(course.db_url, course.course_id) as gradebook:  # the release recorded the lesson there
        assert gradebook.find_assignment(LESSON).notebooks[0].name == LESSON
    assert not course.gradebook.exists(), "the release wrote a SQLite gradebook as well"
    submit(course)
    return course


@pytest.mark.needs("postgres")
def test_a_postgresql_gradebook_gives_the_same_scores_as_sqlite(baseline, postgres_course):
    assert grade(postgres_course, workers=2) == baseline
    assert stored_scores(postgres_course) == baseline
    assert not postgres_course.gradebook.exists()


@pytest.mark.needs("dask", "postgres")
def test_a_dask_cluster_grades_into_a_postgresql_gradebook(baseline, cluster, postgres_course):
    """The multi-machine setup of docs/scale.md, on one machine: the cluster's workers write to PostgreSQL."""
    # Whatever an earlier test graded goes first, so that only this run can have written the scores.
    with Gradebook(postgres_course.db_url, postgres_course.course_id) as gradebook:
        for student in STUDENTS:
            with contextlib.suppress(MissingEntry):
                gradebook.remove_submission(LESSON, student)
    with pytest.raises(MissingEntry):
        stored_scores(postgres_course)
    assert grade(postgres_course, executor=cluster.get_executor()) == baseline
    assert stored_scores(postgres_course) == baseline
