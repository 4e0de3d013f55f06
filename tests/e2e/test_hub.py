"""The course on a real JupyterHub: release, fetch, validate, submit, resubmit, collect, grade, feedback.

A real JupyterHub (PyPI's `jupyterhub`, with npm's configurable-http-proxy that `make hub` installs
into .venv/hub) runs the course's own grader/hub/jupyterhub_config.py: PAM logins of real system
users (made here with useradd: an instructor and two students), each server started as its user by
the LocalProcessSpawner, nbgrader's exchange in a folder every user can write. Headless Chromium
(Playwright) logs each user in through the hub's login page. The instructor's JupyterLab has
Formgrader; the students' has the Assignments panel and no instructor tool.

The instructor's steps are the commands they type in their server's terminal, run here as their
system user: `python -m grader hub-release`, `hub-collect`, `autograde` (the course's sandbox; no
--source), `nbgrader release_feedback`. The students' steps are clicks in the Assignments panel:
fetch; Ada submits the release untouched, then copies the reference answers in, validates and
submits again; Grace answers with a common mistake (tests/fixtures/<lesson>/submissions.toml) and
submits; after grading both fetch their feedback and open it. The test asserts the exact scores
(Ada's latest attempt is collected, full marks; Grace loses exactly the fixture's test cells), the
late policy counting from the time the exchange received each submission (a deadline 25 hours back), that
each student's feedback shows their own score and that neither can reach the other's files, server or
feedback; and that the same notebooks graded as `make submit` files from an LMS download get the
same scores. A forged submission (in Ada's name, made by Grace, a link to the gradebook inside) is
refused by hub-collect and costs Ada nothing.

Needs root (useradd; the hub switches to each user): skipped otherwise, saying so. Where the
repository sits below a folder other users cannot enter (/root), the hub runs in bubblewrap's view of
the machine that shows them this repository (tests/ordinary_user.py), changing nothing on the host.
"""

from __future__ import annotations

import csv
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.course import ROOT
from grader.extras import EXTRAS
from grader.student.submission_names import submission_filename
from tests.ordinary_user import visible_to_all
from tests.support import Variant, build, make_course, mistake, points_of

LESSON = "03-parallel-heads"
COURSE_ID = "attention"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
UI_TIMEOUT_MS = 120_000  # the longest one UI state may take: a server spawning on a busy machine, a validation
pytestmark = pytest.mark.needs("playwright", "chromium", "jupyterhub")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0


class Users:
    """Real system users for one test run, removed afterwards; their homes under `homes`."""

    def __init__(self, homes: Path):
        self.homes, self.made, self.passwords = homes, [], {}

    def add(self, name: str) -> str:
        subprocess.run(["useradd", "--create-home", "--home-dir", str(self.homes / name), "--shell", "/bin/bash",
                        "--user-group", name], check=True, capture_output=True, text=True)
        self.made.append(name)
        # Private homes, as a hub must have them (useradd's default mode lets every user read them).
        (self.homes / name).chmod(0o700)
        password = secrets.token_urlsafe(12)
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", check=True, capture_output=True, text=True)
        self.passwords[name] = password
        return name

    def remove(self) -> None:
        """Stop whatever still runs as these users (this test started it all), then remove them."""
        leftover = [p for p in psutil.process_iter(["username"]) if p.info["username"] in self.made]
        for process in leftover:
            process.kill()
        psutil.wait_procs(leftover, timeout=10)
        for name in self.made:
            done = subprocess.run(["userdel", name], capture_output=True, text=True)
            assert done.returncode == 0, f"userdel {name}: {done.stderr}"


def stop_hub(process: subprocess.Popen) -> None:
    """Stop the hub: SIGTERM to JupyterHub itself (inside bwrap's view, if any), which stops every server
    it started and its proxy; then whatever of its process tree is left, by process id."""
    def command(p: psutil.Process) -> str:
        try:
            return " ".join(p.cmdline()[:3])
        except psutil.Error:
            return ""

    root = psutil.Process(process.pid)
    tree = [root, *root.children(recursive=True)]
    hubs = [p for p in tree if "-m jupyterhub" in command(p)] or [root]
    for hub in hubs:
        hub.terminate()
    started = time.monotonic()
    _, alive = psutil.wait_procs(hubs, timeout=60)
    for leftover in [*alive, *tree]:
        try:
            leftover.kill()
        except psutil.Error:
            pass
    process.wait(timeout=30)
    assert not alive, f"JupyterHub did not stop within {time.monotonic() - started:.0f} s of SIGTERM"


def as_user(user: str, view: list[str]) -> list[str]:
    """argv prefix: run as `user` (their groups), in the view of the machine the hub has."""
    return [*view, "setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]


def user_env(user: str, extra: dict[str, str]) -> dict[str, str]:
    home = pwd.getpwnam(user).pw_dir
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": home, "USER": user, "LOGNAME": user,
            "LANG": "C.UTF-8", **extra}


@pytest.fixture(scope="module")
def hub():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("the hub test needs root: it creates system users (useradd) and starts JupyterHub, "
                    "whose LocalProcessSpawner starts each user's server as that user")
    for program in ("useradd", "userdel", "chpasswd", "setpriv"):
        if shutil.which(program) is None:
            pytest.skip(f"the hub test needs {program} (Debian's passwd / util-linux)")
    # Every user must reach the exchange, the shared folder and the homes: not below pytest's 0700 folder.
    base = Path(tempfile.mkdtemp(prefix="course-hub-", dir="/tmp"))
    base.chmod(0o755)
    tag = secrets.token_hex(3)
    users = Users(base / "home")
    (base / "home").mkdir(mode=0o755)
    try:
        instructor = users.add(f"hub_teacher_{tag}")
        ada, grace = users.add(f"hub_ada_{tag}"), users.add(f"hub_grace_{tag}")
        exchange, shared, state = base / "exchange", base / "shared", base / "hub-state"
        exchange.mkdir(mode=0o777)
        exchange.chmod(0o1777)
        shared.mkdir(mode=0o755)
        state.mkdir(mode=0o700)
        instructor_home = Path(pwd.getpwnam(instructor).pw_dir)
        course = make_course(instructor_home / "attention", lessons=[LESSON], course_id=COURSE_ID)
        # The instructor owns the course repository and the shared folder that hub-release writes.
        # A deadline 25 hours before the test: every hub submission is late by 1 d 1 h and a few minutes,
        # two started days, 20 % of its score, if the late policy reads the time the exchange received it.
        deadline = datetime.now(UTC) - timedelta(hours=25)
        with (course.root / "nbgrader_config.py").open("a") as config:
            config.write(f"c.LatePolicy.deadlines = {{{LESSON!r}: {deadline:'%Y-%m-%d %H:%M:%S UTC'}}}\n")
        subprocess.run(["chown", "-R", f"{instructor}:{instructor}", str(course.root), str(shared)], check=True)
        view = visible_to_all([str(ROOT), *{os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}])
        settings = {"ATTENTION_EXCHANGE": str(exchange), "ATTENTION_COURSE_ID": COURSE_ID,
                    "ATTENTION_SHARED": str(shared), "ATTENTION_COURSE": str(course.root)}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, **settings, "ATTENTION_INSTRUCTORS": instructor, "ATTENTION_STUDENTS": f"{ada},{grace}",
               "ATTENTION_HUB_STATE": str(state), "ATTENTION_HUB_URL": url,
               "ATTENTION_PROXY": EXTRAS["jupyterhub"].executable()}
        env.pop("PYTHONPATH", None)
        log_path = base / "hub.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [*view, sys.executable, "-m", "jupyterhub", "-f", str(ROOT / "grader" / "hub" / "jupyterhub_config.py"),
                 f"--JupyterHub.hub_port={free_port()}",
                 f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{free_port()}"],
                cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while status(f"{url}/hub/api/") != 200:
                assert process.poll() is None, f"JupyterHub exited with {process.returncode}:\n{log_path.read_text()}"
                assert time.monotonic() < deadline, f"JupyterHub did not answer in 120 s:\n{log_path.read_text()}"
                time.sleep(0.5)
            yield {"url": url, "base": base, "course": course, "exchange": exchange, "shared": shared,
                   "instructor": instructor, "ada": ada, "grace": grace, "passwords": users.passwords,
                   "view": view, "settings": settings, "log": log_path}
        finally:
            stop_hub(process)
            if ARTIFACTS.is_dir():
                shutil.copyfile(log_path, ARTIFACTS / "hub.log")
    finally:
        users.remove()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api  # the test is skipped where the extra is missing (tests/plugins/extras.py)

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=EXTRAS["chromium"].executable(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def instructor_runs(hub, *command: str, timeout: int = 900) -> str:
    """A command the instructor types in their server's terminal, in the course repository, as their user."""
    user = hub["instructor"]
    done = subprocess.run([*as_user(user, hub["view"]), *command], cwd=hub["course"].root, capture_output=True,
                          text=True, timeout=timeout, env=user_env(user, hub["settings"]))
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout + done.stderr


def user_runs(hub, user: str, script: str) -> subprocess.CompletedProcess:
    """Python `script` run as `user` (what their server's terminal or a kernel could do)."""
    return subprocess.run([*as_user(user, hub["view"]), sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120, env=user_env(user, hub["settings"]), cwd="/")


def wait_for(page, script: str, what: str, arg=None) -> None:
    from playwright.sync_api import TimeoutError as UITimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=UI_TIMEOUT_MS)
    except UITimeout:
        shot = ARTIFACTS / f"hub-timeout-{re.sub(r'[^a-z]+', '-', what.lower())[:40]}.png"
        page.screenshot(path=str(shot), full_page=True)
        raise AssertionError(f"timed out waiting for {what}; see {shot}") from None


def log_in(browser, hub, user: str):
    """A browser context of `user`, logged in through the hub's login page, at their JupyterLab."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{hub['url']}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub["passwords"][user])
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{user}/lab"), timeout=UI_TIMEOUT_MS)
    wait_for(page, "() => document.querySelector('#jp-MainMenu') !== null", f"{user}'s JupyterLab")
    return context, page


def open_menu(page, menu: str, item: str) -> None:
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click()


def menu_items(page) -> list[str]:
    """The items of JupyterLab's Nbgrader menu (opened and closed again)."""
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Nbgrader$")).click()
    items = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    return items


def assignments_panel(page):
    open_menu(page, "Nbgrader", "Assignment List")
    panel = page.locator("#nbgrader-assignment-list, .nbgrader-assignment-list").first
    panel.wait_for(timeout=UI_TIMEOUT_MS)
    return panel


def refresh(page) -> None:
    page.locator("#nbgrader-assignment-list button[title*='Refresh'], "
                 ".nbgrader-assignment-list button:has-text('Refresh')").first.click()


def row_button(page, section: str, label: str):
    """The button `label` of the lesson's row in the panel's `section` (released, fetched, submitted)."""
    return page.locator(f"#{section}_assignments_list .list_item", has_text=LESSON).locator(
        "button", has_text=re.compile(rf"^\s*{label}\s*$")).first


def write_as(hub, user: str, path: Path, nb: nbformat.NotebookNode) -> None:
    """Save `nb` at `path` as `user` would (their file, their ownership)."""
    data = nbformat.writes(nb)
    done = subprocess.run([*as_user(user, hub["view"]), sys.executable, "-c",
                           f"import sys; open({str(path)!r}, 'w').write(sys.stdin.read())"],
                          input=data, capture_output=True, text=True, env=user_env(user, hub["settings"]))
    assert done.returncode == 0, done.stderr


def student_fetches(page, hub, user: str) -> Path:
    assignments_panel(page)
    button = row_button(page, "released", "Fetch")
    button.wait_for(timeout=UI_TIMEOUT_MS)
    button.click()
    fetched = Path(pwd.getpwnam(user).pw_dir) / LESSON / f"{LESSON}.ipynb"
    wait_for(page, "() => !!document.querySelector('#fetched_assignments_list .list_item')", f"{user}'s fetched lesson")
    assert fetched.is_file(), f"{user}: Fetch did not write {fetched}"
    return fetched


def student_submits(page) -> None:
    submitted = page.locator("#submitted_assignments_list .list_item")
    before = submitted.count()
    row_button(page, "fetched", "Submit").click()
    wait_for(page, "n => document.querySelectorAll('#submitted_assignments_list .list_item').length > n",
             "the submission to be listed", before)


def student_validates(page) -> str:
    """Validate the fetched lesson from the Assignments panel; the dialog's text."""
    page.locator("#fetched_assignments_list .list_item", has_text=LESSON).locator(
        "a, button", has_text=re.compile(r"^\s*\(?\d+ notebooks?\)?|^\s*" + LESSON)).first.click()
    page.locator("#fetched_assignments_list button", has_text=re.compile(r"^\s*Validate\s*$")).first.click()
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=UI_TIMEOUT_MS)
    wait_for(page, "() => !/Validating/i.test(document.querySelector('.jp-Dialog-content').innerText)",
             "the validation to finish")
    text = dialog.inner_text()
    page.locator(".jp-Dialog .jp-mod-accept, .jp-Dialog button").first.click()
    return text


def grades(course, lesson: str = LESSON) -> dict[str, dict]:
    with course.layout.grades_csv(lesson).open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_release_fetch_submit_collect_grade_and_feedback_on_a_real_hub(hub, browser, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    course, ada, grace, teacher = hub["course"], hub["ada"], hub["grace"], hub["instructor"]
    release = course.release(LESSON)
    points = points_of(release)
    full = sum(points.values())
    wrong = mistake(LESSON)
    grace_expected = full - sum(points[g] for g in wrong.lost)
    assert 0 < grace_expected < full

    # The instructor: Formgrader in JupyterLab; then releases the lesson from the terminal.
    context, page = log_in(browser, hub, teacher)
    assert "Formgrader" in menu_items(page), "the instructor's Nbgrader menu has no Formgrader"
    assert page.request.get(f"{hub['url']}/user/{teacher}/formgrader").status == 200
    open_menu(page, "Nbgrader", "Formgrader")
    wait_for(page, "() => [...document.querySelectorAll('iframe')].some(f => /formgrader/.test(f.src))",
             "the Formgrader panel")
    page.screenshot(path=str(ARTIFACTS / "hub-instructor-formgrader.png"))
    context.close()
    out = instructor_runs(hub, sys.executable, "-m", "grader", "hub-release", LESSON, "--course", str(course.root))
    assert f"released {LESSON}" in out, out
    assert (hub["shared"] / "lesson_helpers.py").is_file()
    assert (hub["shared"] / "jupyter" / "nbgrader_config.py").is_file()

    # The students: fetch, (Ada: submit untouched, then answer, validate, resubmit), Grace: a mistake.
    students = {}
    for user in (ada, grace):
        context, page = log_in(browser, hub, user)
        items = menu_items(page)
        assert "Assignment List" in items and not {"Formgrader", "Course List"} & set(items), items
        assert page.request.get(f"{hub['url']}/user/{user}/formgrader").status == 404, "students get a formgrader"
        fetched = student_fetches(page, hub, user)
        students[user] = (context, page, fetched)
    context, page, fetched = students[ada]
    student_submits(page)
    answered = build(LESSON, fetched, Variant(name="reference"))
    write_as(hub, ada, fetched, answered)
    verdict = student_validates(page)
    page.screenshot(path=str(ARTIFACTS / "hub-ada-validate.png"))
    assert "passes all" in verdict.lower() or "success" in verdict.lower(), verdict
    student_submits(page)
    context, page, fetched = students[grace]
    write_as(hub, grace, fetched, build(LESSON, fetched, wrong))
    student_submits(page)

    # A forgery, by Grace, in Ada's name and later than Ada's: an inbound folder holding a link to the
    # instructor's gradebook as the notebook. hub-collect must refuse it.
    inbound = hub["exchange"] / COURSE_ID / "inbound"
    forged = user_runs(hub, grace, (
        "import os, datetime\n"
        f"d = os.path.join({str(inbound)!r}, '{ada}+{LESSON}+' + "
        "(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1))"
        ".strftime('%Y-%m-%d %H:%M:%S.%f UTC') + '+forged')\n"
        "os.mkdir(d)\n"
        f"os.symlink({str(course.gradebook)!r}, os.path.join(d, '{LESSON}.ipynb'))\n"
        "open(os.path.join(d, 'submission_secret.txt'), 'w').write('x')\n"
        "open(os.path.join(d, 'timestamp.txt'), 'w').write('2020-01-01 00:00:00.000000 UTC')\n"))
    assert forged.returncode == 0, forged.stderr

    # The instructor: collect, grade with the course's sandbox, release the feedback.
    out = instructor_runs(hub, sys.executable, "-m", "grader", "hub-collect", LESSON, "--course", str(course.root))
    assert f"{LESSON}: 3 submission(s) collected" in out, out  # Ada's two and Grace's one, not the forgery
    assert re.search(rf"refused: {ada}\+{LESSON}\+.*\+forged: the folder is not owned by {ada}", out), out
    collected = nbformat.read(course.layout.submitted_notebook(ada, LESSON), as_version=4)
    assert [c.source for c in collected.cells] == [c.source for c in answered.cells], "not Ada's latest attempt"
    instructor_runs(hub, sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(course.root))
    rows = grades(course)
    shutil.copyfile(course.layout.grades_csv(LESSON), ARTIFACTS / "hub-grades.csv")
    assert float(rows[ada]["total"]) == full, rows[ada]
    assert float(rows[grace]["total"]) == grace_expected, rows[grace]
    # Grading day's outputs, from hub submissions: the late policy counts from the exchange's time.
    assert rows[ada]["late"] == f"late 1 d 1 h (-{full * 0.2:g} points)", rows[ada]
    assert rows[grace]["late"] == f"late 1 d 1 h (-{grace_expected * 0.2:g} points)", rows[grace]
    grades_folder = course.layout.grades_csv(LESSON).parent
    with (grades_folder / f"{LESSON}-canvas.csv").open(encoding="utf-8") as handle:
        canvas = {row["SIS Login ID"]: row for row in csv.DictReader(handle)}
    assert float(canvas[ada][LESSON]) == pytest.approx(full * 0.8), canvas[ada]
    assert float(canvas[grace][LESSON]) == pytest.approx(grace_expected * 0.8), canvas[grace]
    for report in ("overview", "similarity"):
        assert (grades_folder / f"{LESSON}-{report}.html").is_file(), f"no {report} report of the hub batch"
    instructor_runs(hub, sys.executable, "-m", "nbgrader", "release_feedback", LESSON, f"--course={COURSE_ID}",
                    f"--Exchange.root={hub['exchange']}")

    # Each student fetches their feedback and opens it: their score, and nothing of the other's.
    for user, score in ((ada, full * 0.8), (grace, grace_expected * 0.8)):  # the page's score is after the penalty
        context, page, fetched = students[user]
        refresh(page)
        row_button(page, "submitted", "Fetch Feedback").click()
        home = Path(pwd.getpwnam(user).pw_dir)
        wait_for(page, "() => [...document.querySelectorAll('#submitted_assignments_list a, "
                       "#submitted_assignments_list button')].some(e => /view feedback/i.test(e.innerText))",
                 f"{user}'s feedback")
        pages = sorted(home.glob(f"{LESSON}/feedback/*/{LESSON}.html"))
        assert pages, f"{user}: no feedback fetched into {home / LESSON / 'feedback'}"
        # "(view feedback)" shows the feedback folder in the file browser; the student opens the page
        # from there in a browser tab (JupyterLab's "Open in New Browser Tab": the server's /files/).
        page.locator("#submitted_assignments_list a", has_text=re.compile("view feedback", re.I)).last.click()
        wait_for(page, "name => [...document.querySelectorAll('.jp-DirListing-item')].some("
                       "e => e.innerText.includes(name))", f"{user}'s feedback in the file browser", f"{LESSON}.html")
        shown = context.new_page()
        shown.goto(f"{hub['url']}/user/{user}/files/{pages[-1].relative_to(home).as_posix()}")
        heading = shown.locator(".summary h1").inner_text()
        found = re.search(r"\(Score: ([\d.]+) / ([\d.]+)\)", heading)
        assert found and float(found.group(1)) == pytest.approx(score), f"{user} sees {heading!r}, graded {score}"
        other = grace if user == ada else ada
        assert other not in pages[-1].read_text(), f"{user}'s feedback names {other}"
        # Not the other's server, files or feedback: from their browser session and as their user.
        answer = shown.request.get(f"{hub['url']}/user/{other}/api/contents/{LESSON}", max_redirects=0)
        assert answer.status in (302, 403, 404) and '"content"' not in answer.text(), (answer.status, answer.text())
        peek = user_runs(hub, user, (
            "import os, glob\n"
            f"print(os.listdir({str(Path(pwd.getpwnam(other).pw_dir))!r}) if os.access("
            f"{str(Path(pwd.getpwnam(other).pw_dir))!r}, os.R_OK) else 'closed')\n"
            f"print(os.access({str(hub['exchange'] / COURSE_ID / 'feedback')!r}, os.R_OK))\n"
            f"print(os.access({str(course.gradebook)!r}, os.R_OK))\n"))
        assert peek.stdout.split() == ["closed", "False", "False"], peek.stdout + peek.stderr
        context.close()

    # The same notebooks as `make submit` files from an LMS download: the same scores.
    lms = make_course(tmp_path / "lms", lessons=[LESSON], course_id=COURSE_ID)
    download = tmp_path / "download"
    download.mkdir()
    for user in (ada, grace):
        nb = course.layout.submitted_notebook(user, LESSON).read_bytes()
        (download / submission_filename(LESSON, user, "20260115-100000")).write_bytes(nb)
    done = subprocess.run([sys.executable, "-m", "grader", "autograde", LESSON, "--course", str(lms.root),
                           "--source", str(download)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    via_lms = grades(lms)
    for user in (ada, grace):
        hub_row, lms_row = rows[user], via_lms[user]
        assert {g: hub_row[g] for g in points} == {g: lms_row[g] for g in points}, (hub_row, lms_row)
        assert hub_row["total"] == lms_row["total"]  # before the late penalty, which only the hub's deadline sets
