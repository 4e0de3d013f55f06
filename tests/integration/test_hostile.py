"""The hostile suite: attacks on the grader, graded in one batch next to honest submissions.

tests/fixtures/hostile/*.toml hold the attacks (see 03-parallel-heads.toml's header), all graded in
one batch. Secrets are
planted where an attacker would look: a file in the course's grading state and one in its root,
one in the host's /tmp, a variable in the grader's environment, and a value in an honest
classmate's notebook. `python -m grader autograde` grades everything in one run, as an instructor
would, with HOME moved to a folder of the test's own. Then nothing may show that an attack
worked: the checks below read the grades, every output of every notebook, every feedback page,
the files an attack tried to write, and the process table.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import secrets
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.course import REPO, submission_filename
from grader.grading.batch import main as autograde
from tests.support import Course, batch_scores, build_notebook, hostile_cases, make_course, points_of

LESSON = "03-parallel-heads"
CELL_TIMEOUT = 10  # seconds per cell: the attacks that hang cost this
ATTEMPT = "20260115-100000"


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

    def notebook(self, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.course.layout.autograded_notebook(student, LESSON), as_version=4)

    def outputs(self, student: str) -> str:
        """Every output of the student's autograded notebook, as text."""
        return "\n".join(nbformat.writes(nbformat.from_dict({"outputs": cell.get("outputs", [])}))
                         for cell in self.notebook(student).cells)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Hostile:
    root = tmp_path_factory.mktemp("hostile")
    course = make_course(root / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    home = root / "home"
    home.mkdir()
    token = secrets.token_hex(8)
    planted = {where: f"SECRET-{where}-{secrets.token_hex(8)}" for where in ("state", "root", "tmp", "env", "home",
                                                                             "honest")}
    state = course.layout.state
    state.mkdir(parents=True, exist_ok=True)
    (state / "canary.txt").write_text(planted["state"])
    (course.root / "canary.txt").write_text(planted["root"])
    (home / "secret.txt").write_text(planted["home"])
    tmp_canary = Path(f"/tmp/hostile-canary-{token}.txt")
    tmp_canary.write_text(planted["tmp"])
    values = {"token": token, "course": str(course.root), "state": str(state), "home": str(home), "repo": str(REPO),
              "tmp_canary": str(tmp_canary), "honest_secret": planted["honest"], "listener": "http://127.0.0.1:9"}
    cases = hostile_cases(values)
    release = course.release(LESSON)
    archive = root / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name, spec in cases.items():
            # ensure_ascii: a lone surrogate in the notebook is written as its JSON escape, as a browser would
            handle.writestr(submission_filename(LESSON, name, ATTEMPT),
                            nbformat.writes(build_notebook(LESSON, release, spec), ensure_ascii=True))
    guarded = [course.root / "nbgrader_config.py", REPO / "nbgrader_config.py", REPO / "grader" / "nbgrader_config.py",
               REPO / "grader" / "pipeline" / "__init__.py"]
    before = {str(path): digest(path) for path in guarded}
    env = {**os.environ, "HOME": str(home), "HOSTILE_ENV_SECRET": planted["env"]}
    try:
        run = subprocess.run([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(course.root),
                              "--source", str(archive), "--workers", "2", "--timeout", str(CELL_TIMEOUT)],
                             capture_output=True, text=True, timeout=1500, env=env)
    finally:
        tmp_canary.unlink(missing_ok=True)
    with course.layout.grades_csv(LESSON).open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    return Hostile(course, run, rows, cases, token, planted, home, before)


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
        assert reason in hostile.rows[name]["flags"], (name, hostile.rows[name]["flags"])
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
            wrong[name] = (got, row["flags"])
        missing = [flag for flag in spec.get("flags", []) if flag not in row["flags"]]
        if missing:  # every submission's verdict is reported, not only the first wrong one
            flagless[name] = f"expected flags {missing} in {row['flags']!r}"
    assert not wrong and not flagless, (wrong, flagless)


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
    marks = [p for p in (*REPO.rglob(f"PWNED-{hostile.token}*"), *Path("/tmp").glob(f"PWNED-{hostile.token}*"),
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
        if hostile.token in cmdline or "grader-kernel-" in cmdline or "grader-runs-" in cmdline:
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
    start, last = page.index("<pre>tiny "), page.rindex("loop / batched")
    page = page[:start] + page[page.index("</pre>", last):]
    return re.sub(r'</pre>\s*</div>\s*</div>\s*<div class="output_area">\s*<div class="prompt"></div>\s*'
                  r'<div class="output_subarea output_stream output_stdout output_text">\s*<pre>', "", page)


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
