"""The hostile suite: attacks on the grader, graded in one batch next to honest submissions.

Every TOML of tests/fixtures/hostile/ holds attacks (see each header), all graded in one batch.
Secrets are planted where an attacker would look: a file in the course's grading state and one in
its root, one in the host's /tmp, a variable in the grader's environment, a key in the grader's
session keyring, and a value in an honest classmate's notebook. `python -m grader autograde`
grades everything in one run, as an instructor would, with HOME moved to a folder of the test's
own. Then nothing may show that an attack worked: the checks below read the grades, every output
of every notebook, every feedback page, the files an attack tried to write, and the process table.
While the batch runs, a sampler reads every kernel's cgroup from the host: its tasks, its memory,
and the host uid of each of its processes.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.course import ROOT, nbgrader_config
from grader.grading.autograde import main as autograde
from grader.pipeline.feedback_summary import NOTEBOOK, SLOT, FeedbackSummary, filled
from grader.sandbox import cgroup
from tests.integration.guarded_run import cgroups_here
from tests.support import (
    Course,
    batch_scores,
    build_notebook,
    hostile_cases,
    make_course,
    plant_key,
    points_of,
    unlink_key,
    write_download,
)

LESSON = "03-parallel-heads"
MAX_TASKS = nbgrader_config().KernelLimits.max_processes  # the course's task limit per kernel, read where set
MAX_MEMORY = nbgrader_config().KernelLimits.tree_memory_limit  # its memory limit per kernel, read where set
CELL_TIMEOUT = 10  # seconds per cell: the attacks that hang cost this
WALL_FACTOR = 4  # the course's GuardedExecute.wall_timeout_factor: a cell's wall-clock backstop where CPU time counts
# `make test` grades one attack of each class next to the honest students; `make test-all` every attack.
ONE_PER_CLASS = {"write_gradebook": "a forgery", "kill_every_process": "a kill", "swallows_the_interrupt": "a hang",
                 "read_state_canary": "a leak"}
ATTEMPT = "20260115-100000"


@dataclass
class Sampled:
    """What the sampler saw of the kernels' cgroups and the grading processes while the batch ran."""

    uids: dict[str, set[int]]  # kernel cgroup -> host uids of its processes (bwrap itself, run by root, aside)
    tasks: dict[str, int]  # kernel cgroup -> most tasks seen at once
    memory: dict[str, int]  # kernel cgroup -> most bytes of memory seen
    grader_rss: int  # most resident bytes of any grading process (kernels aside)
    root_processes: list[str] = field(default_factory=list)  # kernel processes seen as root, if any


def kernel_cgroups() -> list[Path]:
    """The folders of the kernels' cgroups now alive, in the tasks hierarchy (v1 pids, or v2)."""
    mounts, v2 = cgroup._mounts()
    own = cgroup._own_paths()
    parents = [Path(mounts["pids"]) / own.get("pids", "/").lstrip("/")] if "pids" in mounts else []
    if v2:
        parents.append(Path(v2) / own.get("", "/").lstrip("/"))
    return [folder for parent in parents for folder in parent.glob("grader-kernel-*")]


def memory_of(name: str) -> int:
    mounts, v2 = cgroup._mounts()
    own = cgroup._own_paths()
    candidates = []
    if "memory" in mounts:
        candidates.append(Path(mounts["memory"]) / own.get("memory", "/").lstrip("/") / name / "memory.usage_in_bytes")
    if v2:
        candidates.append(Path(v2) / own.get("", "/").lstrip("/") / name / "memory.current")
    for path in candidates:
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            continue
    return 0


def sample(grader: subprocess.Popen, stop: threading.Event, into: Sampled) -> None:
    """Until `stop`, read every kernel cgroup's tasks, memory and processes' host uids, and the grading
    processes' resident memory, from the host side."""
    while not stop.is_set():
        in_kernels: set[int] = set()
        try:
            graders = [psutil.Process(grader.pid), *psutil.Process(grader.pid).children(recursive=True)]
        except psutil.Error:
            graders = []
        # The grading processes themselves (forks of the grader, its command line): their direct children are
        # bwrap, or a fork about to exec it.
        try:
            command = psutil.Process(grader.pid).cmdline()
        except psutil.Error:
            command = []
        launchers = set()
        for process in graders:
            try:
                if process.cmdline() == command:
                    launchers.add(process.pid)
            except psutil.Error:
                pass
        for folder in kernel_cgroups():
            name = folder.name
            try:
                pids = [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
                tasks = int((folder / "pids.current").read_text())
            except (OSError, ValueError):
                continue
            if not set(pids) & {process.pid for process in graders}:
                continue  # another grader's kernel (a benchmark or test beside this one)
            in_kernels.update(pids)
            into.tasks[name] = max(into.tasks.get(name, 0), tasks)
            into.memory[name] = max(into.memory.get(name, 0), memory_of(name))
            for pid in pids:
                try:
                    process = psutil.Process(pid)
                    # bwrap, setpriv and the grader's fork that execs bwrap are root by design, until setpriv drops
                    if process.name() not in ("bwrap", "setpriv") and process.ppid() not in launchers:
                        into.uids.setdefault(name, set()).update(process.uids())
                        if 0 in process.uids():
                            into.root_processes.append(f"{process.name()}: {' '.join(process.cmdline())[:200]}")
                except psutil.Error:
                    pass
        for process in graders:
            try:
                if process.pid not in in_kernels and process.name() != "bwrap":
                    into.grader_rss = max(into.grader_rss, process.memory_info().rss)
            except psutil.Error:
                pass
        time.sleep(0.1)


@dataclass
class Hostile:
    course: Course
    run: subprocess.CompletedProcess
    rows: dict[str, dict[str, str]]
    cases: dict[str, dict]
    token: str
    secrets: dict[str, str]  # where -> secret value
    home: Path
    before: dict[str, str]  # file -> sha256, of the files no submission may change
    sampled: Sampled
    log: str  # the batch's grading log


    def notebook(self, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.course.layout.autograded_notebook(student, LESSON), as_version=4)

    def outputs(self, student: str) -> str:
        """Every output of the student's autograded notebook, as text."""
        return "\n".join(nbformat.writes(nbformat.from_dict({"outputs": cell.get("outputs", [])}))
                         for cell in self.notebook(student).cells)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


@pytest.fixture(scope="module", params=[pytest.param(False, id="one-attack-per-class"),
                                        pytest.param(True, id="every-attack", marks=pytest.mark.more_cases)])
def hostile(request, tmp_path_factory) -> Hostile:
    root = tmp_path_factory.mktemp("hostile")
    # Without a cgroup a cell's limit is wall time (the summary says so): give it the wall time a cgroup's
    # route allows as its backstop, so that a loaded machine does not stop an attack before it is judged.
    timeout = CELL_TIMEOUT if cgroups_here() else CELL_TIMEOUT * WALL_FACTOR
    course = make_course(root / "course", cell_timeout=timeout, lessons=[LESSON])
    home = root / "home"
    home.mkdir()
    token = secrets.token_hex(8)
    planted = {where: f"SECRET-{where}-{secrets.token_hex(8)}" for where in ("state", "root", "tmp", "env", "home",
                                                                             "honest", "keyring")}
    state = course.layout.term
    state.mkdir(parents=True, exist_ok=True)
    (state / "canary.txt").write_text(planted["state"])
    (course.root / "canary.txt").write_text(planted["root"])
    (home / "secret.txt").write_text(planted["home"])
    tmp_canary = Path(f"/tmp/hostile-canary-{token}.txt")
    tmp_canary.write_text(planted["tmp"])
    values = {"token": token, "course": str(course.root), "state": str(state), "home": str(home), "repo": str(ROOT),
              "tmp_canary": str(tmp_canary), "honest_secret": planted["honest"], "listener": "http://127.0.0.1:9"}
    cases = hostile_cases(values)
    if not request.param:
        assert set(ONE_PER_CLASS) <= set(cases), set(ONE_PER_CLASS) - set(cases)
        cases = {name: spec for name, spec in cases.items() if name.startswith("honest_") or name in ONE_PER_CLASS}
    release = course.release(LESSON)
    archive = root / "download.zip"
    write_download(archive, LESSON, release, cases, ATTEMPT)
    guarded = [course.root / "nbgrader_config.py", ROOT / "nbgrader_config.py", ROOT / "grader" / "nbgrader_config.py",
               ROOT / "grader" / "pipeline" / "__init__.py"]
    before = {str(path): digest(path) for path in guarded}
    # TMPDIR under a private (0700) folder, as job schedulers set it: every kernel died there before the run
    # folder moved into the sandbox (issue 39; tests/integration/test_environments.py has the other places).
    tmpdir = root / "job" / "tmp"
    tmpdir.mkdir(parents=True)
    tmpdir.parent.chmod(0o700)
    env = {**os.environ, "HOME": str(home), "HOSTILE_ENV_SECRET": planted["env"], "TMPDIR": str(tmpdir)}
    key = plant_key(f"hostile-canary-{token}", planted["keyring"])
    sampled = Sampled({}, {}, {}, 0)
    stop = threading.Event()
    try:
        grader = subprocess.Popen([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(course.root),
                                   "--source", str(archive), "--workers", "2", "--timeout", str(timeout)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        sampler = threading.Thread(target=sample, args=(grader, stop, sampled), daemon=True)
        sampler.start()
        try:
            stdout, stderr = grader.communicate(timeout=1500)
        finally:
            stop.set()
            sampler.join()
        run = subprocess.CompletedProcess(grader.args, grader.returncode, stdout, stderr)
    finally:
        tmp_canary.unlink(missing_ok=True)
        if key > 0:
            unlink_key(key)
    with course.layout.grades_csv(LESSON).open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    log = course.layout.log(LESSON)
    return Hostile(course, run, rows, cases, token, planted, home, before, sampled,
                   log.read_text(errors="replace") if log.is_file() else "")


def graded(hostile) -> list[str]:
    """The submissions that must be graded (the others are refused, with a reason: `status`, `reason`)."""
    return [name for name, spec in hostile.cases.items() if spec.get("status", "graded") == "graded"]


def test_the_batch_finished_and_graded_everyone(hostile):
    assert hostile.run.returncode == 0, hostile.run.stdout + hostile.run.stderr[-3000:]
    expected = {name: spec.get("status", "graded") for name, spec in hostile.cases.items()}
    statuses = {name: row["status"] for name, row in hostile.rows.items()}
    assert statuses == {name: status for name, status in expected.items() if status != "not collected"}, \
        hostile.run.stdout
    for name in statuses:
        reason = hostile.cases[name].get("reason", "")
        assert reason in hostile.rows[name]["notes"], (name, hostile.rows[name]["notes"])
    not_collected = sum(status == "not collected" for status in expected.values())
    assert re.search(rf"not collected \(files\)\s+{not_collected}\n", hostile.run.stdout), hostile.run.stdout


def test_no_control_byte_from_a_submission_reaches_the_terminal_or_the_log(hostile):
    """Grade ids, file names and reasons a submission controls are printed as inert text (grader.safe_text)."""
    log = hostile.course.layout.log(LESSON)
    for where, text in (("stdout", hostile.run.stdout), ("stderr", hostile.run.stderr),
                        ("log", log.read_text(errors="surrogateescape") if log.is_file() else "")):
        for byte in ("\x1b", "\x07", "\u202e", "\ud800", "\udcff"):
            assert byte not in text, f"{byte!r} from a submission on the grader's {where}"
        assert not re.search(r"(?m)^honest_\w+: .*plagiarism", text), f"a forged line on the grader's {where}"


def test_every_honest_student_has_their_exact_score_and_no_attack_gained_anything(hostile):
    release = hostile.course.release(LESSON)
    wrong, flagless = {}, {}
    for name in graded(hostile):
        spec, row = hostile.cases[name], hostile.rows[name]
        got = {grade_id: float(row[grade_id]) for grade_id in points_of(release)}
        if got != batch_scores(LESSON, release, spec):
            wrong[name] = (got, row["notes"])
        missing = [flag for flag in spec.get("flags", []) if flag not in row["notes"]]
        if missing:  # every submission's verdict is reported, not only the first wrong one
            flagless[name] = f"expected flags {missing} in {row['notes']!r}"
    assert not wrong and not flagless, (wrong, flagless)


def test_no_submission_forged_the_graders_flags_or_weaker_lines(hostile):
    """A submission carrying the grader's own metadata keys (its `not_flags`) gets none of the flags they
    would give, unless the honest students get them too (an ordinary user's kernels have no cgroup), and the
    summary has no UNSAFE: line and no WEAKER: line that no honest row explains."""
    honest = set(hostile.rows["honest_reference"]["notes"].split("; "))
    forged = {name: [flag for flag in spec["not_flags"] if flag not in honest
                     and flag in hostile.rows[name]["notes"].split("; ")]
              for name, spec in hostile.cases.items() if spec.get("not_flags") and name in hostile.rows}
    assert not any(forged.values()), forged
    assert "UNSAFE:" not in hostile.run.stdout
    for flag, line in (("no-cgroup", "WEAKER: kernels had no cgroup"), ("grader-uid", "WEAKER: kernels ran as")):
        assert flag in honest or line not in hostile.run.stdout, hostile.run.stdout


def test_no_secret_reached_any_output_or_feedback(hostile):
    leaks = []
    for name in graded(hostile):
        outputs = hostile.outputs(name)  # what the kernel produced (the feedback page also shows the source)
        page = hostile.course.layout.feedback_page(name, LESSON)
        text = outputs + (page.read_text() if page.is_file() else "")
        for where, value in hostile.secrets.items():
            if value in text and not (where == "honest" and name == "honest_secret_holder"):
                leaks.append(f"{name} obtained the {where} secret")
        for proof in (f"found {hostile.token} in memory", f"{hostile.token}-network", "reached /", r"open ports: \[\d",
                      "template reached", r"outside my run folder: \['", "found leftover"):
            if re.search(proof, outputs):
                leaks.append(f"{name}: {proof}")
    assert not leaks, leaks


def test_nothing_outside_the_sandbox_was_written(hostile):
    layout = hostile.course.layout
    after = {path: digest(Path(path)) for path in hostile.before}
    assert after == hostile.before, "configuration or course code changed"
    marks = [p for p in (*ROOT.rglob(f"PWNED-{hostile.token}*"), *Path("/tmp").glob(f"PWNED-{hostile.token}*"),
                         *Path("/dev/shm").glob(f"PWNED-{hostile.token}*"), *hostile.home.rglob("*pwn*"))]
    assert not marks, marks
    csv_text = layout.grades_csv(LESSON).read_text()
    assert "PWNED" not in csv_text and "999" not in csv_text
    for name in graded(hostile):  # every feedback page is the grader's, not an attacker's
        page = layout.feedback_page(name, LESSON)
        assert page.is_file() and "PWNED" not in page.read_text().split("</style>")[0], name
    honest = nbformat.read(layout.submitted_notebook("honest_reference", LESSON), as_version=4)
    assert "PWNED" not in nbformat.writes(honest)


def test_no_process_of_any_submission_is_left(hostile):
    left = []
    # Templates that this test session's own processes still use for other tests are not left over: what
    # the finished batch left would have been handed to init.
    session = psutil.Process(os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid())
    live = {session.pid, *(p.pid for p in session.children(recursive=True))}
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if process.info["pid"] in live:
            continue
        ours = sys.prefix in cmdline or str(ROOT) in cmdline  # other checkouts on this machine grade too
        if hostile.token in cmdline or (ours and ("grader-kernel-" in cmdline or "grader-runs-" in cmdline)):
            left.append((process.info["pid"], cmdline[:200]))
    assert not left, left


def test_feedback_carries_no_active_content(hostile):
    for name in graded(hostile):
        page = hostile.course.layout.feedback_page(name, LESSON).read_text().lower()
        for active in ("<script", "<iframe", "application/javascript"):
            assert active not in page, f"{name}'s feedback holds {active!r}"
        handlers = re.findall(r"<[a-z][^>]*\son[a-z]+\s*=", page)  # in a tag, not the escaped text of the source
        assert not handlers, f"{name}'s feedback holds event handlers: {handlers[:3]}"
        links = [value for _, attrs in _tags(page) for key, value in attrs if key in ("href", "src", "action")]
        assert not [link for link in links if (link or "").strip().startswith(("javascript:", "vbscript:", "data:text")
                                                                            )], f"{name}'s feedback links to a script"
        assert "content-security-policy" in page, f"{name}'s feedback has no Content-Security-Policy"


def test_no_submission_can_plant_or_move_the_grade_summary(hostile):
    """The summary written after grading (grader.pipeline.feedback_summary) fills the template's slot, before
    every cell, and nothing else, whatever fake slots a page holds (output-and-pages.toml plants them)."""
    for name in graded(hostile):
        page = hostile.course.layout.feedback_page(name, LESSON).read_text()
        boundary = page.index(NOTEBOOK)
        assert page.count(SLOT) == 1 and page.index(SLOT) < boundary, name
        assert "FAKE-SUMMARY" not in page[:boundary], name
        done = filled(page, FeedbackSummary(f"Summary of {name}", name, LESSON, 1, 15, "on time", 0, 1))
        assert done.index(f"Summary of {name}") < done.index(NOTEBOOK), name
        assert done[done.index(NOTEBOOK):] == page[boundary:], name
        assert done.split("<body>")[0] == page.split("<body>")[0], name


def _tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every start tag of `page` with its attributes, as a browser's parser reads them (text is not a tag)."""
    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Tags().feed(page)
    return found


def _seeded_course(root: Path) -> Course:
    """A course of Lesson 3 whose hidden tests draw the same inputs in every run."""
    course = make_course(root, cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    with (course.root / "nbgrader_config.py").open("a") as config:
        config.write("c.InjectTrustedChecks.seed = 7\n")
    return course


def _without_timings(page: str) -> str:
    """`page` without the lesson's timing printout (its numbers vary by run), and with each cell's
    printed lines in one block (where the kernel's output stream splits them varies by run too)."""
    page = re.sub(r'</pre>\s*</div>\s*</div>\s*<div class="output_area">\s*<div class="prompt"></div>\s*'
                  r'<div class="output_subarea output_stream output_stdout output_text">\s*<pre>', "", page)
    start, last = page.index("<pre>tiny "), page.rindex(" microseconds")
    return page[:start] + page[page.index("</pre>", last):]


@pytest.mark.more_cases
def test_a_submission_leaves_nothing_in_its_grading_process_for_the_next(tmp_path):
    """A grading process grades submissions one after another: the one before cannot change the next's page."""
    shared, alone = _seeded_course(tmp_path / "shared"), _seeded_course(tmp_path / "alone")
    honest = build_notebook(LESSON, shared.release(LESSON), {})
    # Metadata that would change how a page is highlighted and which kernel runs it, a cell whose
    # source is the honest one's (the page caches rendered cells by source), and a large output.
    poison = build_notebook(LESSON, shared.release(LESSON), {"first": {"append": "print('PWNED ' * 200_000)"}})
    poison.metadata.language_info = {"name": "html", "pygments_lexer": "html", "file_extension": ".html"}
    poison.metadata.kernelspec = {"name": "bash", "display_name": "Bash", "language": "bash"}
    shared.submit(LESSON, {"a_poison": poison, "b_honest": honest})
    alone.submit(LESSON, {"b_honest": honest})
    for course in (shared, alone):
        with open(os.devnull, "w") as quiet:
            autograde(lesson=LESSON, course=course.root, workers=1, force=True, progress=quiet, out=quiet)
    rows = {}
    for course in (shared, alone):
        with course.layout.grades_csv(LESSON).open() as handle:
            rows[course] = {row["student"]: row for row in csv.DictReader(handle)}
    # One process graded both (it is retired only after a failed one), and the honest one as if alone.
    assert rows[shared]["a_poison"]["status"] == "graded"
    assert rows[shared]["b_honest"] == rows[alone]["b_honest"]
    page = _without_timings(shared.layout.feedback_page("b_honest", LESSON).read_text())
    assert page == _without_timings(alone.layout.feedback_page("b_honest", LESSON).read_text())
    assert "PWNED" not in page


def test_every_kernel_ran_as_its_own_unprivileged_host_uid(hostile):
    """Read from the host: no kernel process is root or the grader's user, and no two kernels share a uid."""
    if os.geteuid() != 0:  # every row says so instead (and test_ordinary_user reads the uids from the host)
        assert all("grader-uid" in row["notes"] for row in hostile.rows.values() if row["status"] == "graded")
        pytest.skip("an ordinary user has no other uid to give a kernel: each runs as the grader's own uid")
    uids = hostile.sampled.uids
    assert len(uids) >= len(hostile.cases) // 2, f"the sampler saw only {len(uids)} kernels"
    seen = set().union(*uids.values())
    assert 0 not in seen and os.getuid() not in seen, (seen, hostile.sampled.root_processes[:5])
    owners: dict[int, str] = {}
    for name, ids in uids.items():
        for uid in ids:
            assert owners.setdefault(uid, name) == name, f"{name} and {owners[uid]} share uid {uid}"


def test_no_kernel_went_over_its_cgroup_task_or_memory_limit(hostile):
    """Thread and fork bursts stop at the cgroup's task limit; memfd and shm memory at its memory limit."""
    graded_rows = [row for row in hostile.rows.values() if row["status"] == "graded"]
    if all("no-cgroup" in row["notes"] for row in graded_rows):  # and the summary says WEAKER
        assert "WEAKER: kernels had no cgroup" in hostile.run.stdout, hostile.run.stdout
        pytest.skip("no cgroup can be made here (an ordinary user without delegation): every row says so")
    assert hostile.sampled.tasks and max(hostile.sampled.tasks.values()) <= MAX_TASKS, hostile.sampled.tasks
    assert max(hostile.sampled.memory.values()) <= MAX_MEMORY, hostile.sampled.memory


def outputs_of_attack(hostile, name: str) -> str:
    """The outputs of one attack's notebook; the test is skipped where the batch left that attack out."""
    if name not in hostile.cases:
        pytest.skip(f"{name} is graded with every attack (make test-all)")
    return hostile.outputs(name)


def test_a_huge_message_never_reached_a_grading_process(hostile):
    """A 256 MiB message is refused at the socket: no grading process ever held it."""
    assert 0 < hostile.sampled.grader_rss < 1024**3, hostile.sampled.grader_rss
    assert "PWNED" not in outputs_of_attack(hostile, "huge_message")


def test_nothing_a_kernel_wrote_reached_the_grader_output_or_log(hostile):
    for where, text in (("stdout", hostile.run.stdout), ("stderr", hostile.run.stderr), ("log", hostile.log)):
        assert f"PWNED-{hostile.token}" not in text, f"a kernel wrote into the grader's {where}"
        assert "\x1b[2J" not in text, f"an escape sequence reached the grader's {where}"
    assert "is running over TCP" not in hostile.log  # and no kernel's own banner either


def test_no_key_was_read_or_planted(hostile):
    assert f"PWNED-{hostile.token}" not in Path("/proc/keys").read_text()
    keyrings = outputs_of_attack(hostile, "keyrings")
    assert "read b'" not in keyrings and "listed" not in keyrings


@pytest.mark.more_cases
def test_six_workers_with_honest_students_only_keep_their_exact_scores(tmp_path):
    """Six kernels at once on a small machine: each its own uid and cgroup, so none fails another."""
    course = make_course(tmp_path / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    release = course.release(LESSON)
    honest = {f"honest_{index}": build_notebook(LESSON, release, {}) for index in range(8)}
    course.submit(LESSON, honest)
    with open(os.devnull, "w") as quiet:
        batch = autograde(lesson=LESSON, course=course.root, workers=6, force=True, progress=quiet, out=quiet)
    expected = batch_scores(LESSON, release, {})
    assert {r.student: (r.status, r.scores) for r in batch.results} == {
        name: ("graded", expected) for name in honest}
