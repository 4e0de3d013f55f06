"""A student's session in a real browser: `make lab`, Lesson 3, every exercise answered, handed in.

The JupyterLab server is the one `make lab` starts (`python -m grader lab`, with the course's
student configuration), serving a temporary copy of lessons/ on loopback with a token. Headless
Chromium (Debian's `chromium`, driven by Playwright) opens the lesson, types the reference answers
into the exercise cells, runs every cell, and the test asserts what a student would look for: no
error anywhere, every heatmap drawn, every visible test cell passing, nbgrader's Validate button
reporting success. The notebook JupyterLab saved then goes through `make check` and `make submit`.
Screenshots of the heatmaps and of the Validate dialog are saved in artifacts/.

Without Chromium (`CHROMIUM`, else `chromium` on PATH) or the `playwright` package (`make browser`)
the test is skipped, naming each missing extra and its install command, never passed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import nbformat
import pytest

from grader import cell_roles
from grader.course import LESSONS, ROOT, reference_notebook, student_notebook
from grader.extras import EXTRAS
from grader.student import check as selfcheck
from grader.student import lab, submit
from grader.student.submission_names import SUBMISSION_REGEXP
from tests.support import reference_answers

LESSON = "03-parallel-heads"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
UI_TIMEOUT_MS = 90_000  # the longest any one UI state may take to appear (a full run of the lesson, or validate)

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> int:
    """The HTTP status of GET `url`, or 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`make lab`'s JupyterLab on a temporary copy of lessons/, isolated from the user's Jupyter state."""
    root = tmp_path_factory.mktemp("lab")
    lessons = root / "lessons"
    shutil.copytree(LESSONS, lessons, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = root / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # The "official Jupyter news?" toast would sit over the notebook; it makes no difference to a lesson.
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = lab.environment()
    env.update(JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_RUNTIME_DIR=str(root / "runtime"),
               JUPYTER_DATA_DIR=str(root / "data"), IPYTHONDIR=str(root / "ipython"),
               JUPYTERLAB_SETTINGS_DIR=str(root / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
    port, token = free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    args = ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True"]
    log_path = root / "server.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "grader", "lab", "--root-dir", str(lessons), "--", *args],
                                   cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while get(f"{base}/api/status?token={token}") != 200:
            assert process.poll() is None, f"JupyterLab exited with {process.returncode}:\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"JupyterLab did not answer within 90 s:\n{log_path.read_text()}"
            time.sleep(0.3)
        yield {"base": base, "token": token, "lessons": lessons, "log": log_path}
    finally:
        request = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
        try:
            urllib.request.urlopen(request, timeout=10).close()  # also shuts down the kernels it started
        except urllib.error.HTTPError as error:
            error.close()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api  # the test is skipped where the extra is missing (tests/plugins/extras.py)

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=EXTRAS["chromium"].executable(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def figure_cells(lesson: str) -> dict[int, int]:
    """Cell index -> number of images, for every cell of the reference notebook that draws a figure."""
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    counts = {i: sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
              for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
    return {i: n for i, n in counts.items() if n}


def wait_for(page, script: str, what: str, arg=None) -> None:
    from playwright.sync_api import TimeoutError as UITimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=UI_TIMEOUT_MS)
    except UITimeout:
        page.screenshot(path=str(ARTIFACTS / f"browser-{LESSON}-timeout.png"), full_page=True)
        raise AssertionError(f"timed out waiting for {what}; see artifacts/browser-{LESSON}-timeout.png") from None


@pytest.mark.needs("playwright", "chromium")
def test_student_answers_runs_validates_and_submits_lesson_3(browser, server, tmp_path, capsys):
    ARTIFACTS.mkdir(exist_ok=True)
    release = nbformat.read(student_notebook(LESSON), as_version=4)
    answers = reference_answers(LESSON)
    answer_cells = {i: answers[cell_roles.grade_id(c)] for i, c in enumerate(release.cells)
                    if cell_roles.kind(c) == "solution"}
    test_cells = [i for i, c in enumerate(release.cells) if cell_roles.is_graded(c)]
    figures = figure_cells(LESSON)
    assert answer_cells and test_cells and figures, "Lesson 3 should have exercises, test cells and heatmaps"
    n_code = sum(c.cell_type == "code" for c in release.cells)

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server['base']}/lab/tree/{LESSON}/{LESSON}.ipynb?token={server['token']}")
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    wait_for(page, "n => document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell').length === n",
             "the notebook's cells", len(release.cells))
    wait_for(page, """() => {
        const name = document.querySelector('.jp-NotebookPanel-toolbar .jp-KernelName');
        const state = document.querySelector('.jp-Notebook-ExecutionIndicator');
        return name && name.textContent.includes('Python') && state && state.dataset.status === 'idle';
    }""", "the Python kernel to be ready")

    # A student's UI: nbgrader's Validate button, none of its instructor tools.
    menu_bar = page.locator("#jp-MainMenu").inner_text()
    assert "Nbgrader" not in menu_bar, f"the instructor's nbgrader menu is shown to students: {menu_bar!r}"
    validate_button = page.locator(".jp-NotebookPanel-toolbar .validate-button")
    assert validate_button.count() == 1, "nbgrader's Validate button is missing from the notebook toolbar"
    assert get(f"{server['base']}/formgrader?token={server['token']}") == 404, "the formgrader is served to students"

    # Type each answer into its exercise cell, replacing the `raise NotImplementedError()` stub.
    for index, answer in answer_cells.items():
        cells.nth(index).locator(".cm-content").click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(answer)
        page.keyboard.press("Escape")

    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    wait_for(page, """n => {
        const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')];
        const state = document.querySelector('.jp-Notebook-ExecutionIndicator');
        return prompts.length === n && prompts.every(p => /^\\[\\d+\\]:$/.test(p.textContent.trim()))
            && state && state.dataset.status === 'idle';
    }""", "every cell to finish running", n_code)

    errors = page.locator(".jp-NotebookPanel .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, "error or stderr output in the browser:\n" + "\n---\n".join(errors.all_text_contents())

    for index, n_images in figures.items():
        images = cells.nth(index).locator(".jp-OutputArea-output img")
        assert images.count() == n_images, f"cell {index} should show {n_images} figure(s), shows {images.count()}"
        for k in range(n_images):
            image = images.nth(k)
            image.scroll_into_view_if_needed()
            size = image.evaluate("img => img.complete ? [img.naturalWidth, img.naturalHeight] : [0, 0]")
            assert min(size) > 100, f"cell {index}: figure {k} did not render as an image ({size})"
            image.screenshot(path=str(ARTIFACTS / f"browser-{LESSON}-cell{index:02d}-figure{k}.png"))

    for index in test_cells:
        text = cells.nth(index).locator(".jp-OutputArea").text_content()
        assert "visible checks passed" in text, f"test cell {index} did not pass in the browser: {text!r}"

    # Validate: nbgrader's button saves the notebook, then runs its visible tests on the server.
    validate_button.click()
    dialog = page.locator("#validation-message")
    dialog.wait_for(timeout=UI_TIMEOUT_MS)
    page.locator(".jp-Dialog-content").screenshot(path=str(ARTIFACTS / f"browser-{LESSON}-validate.png"))
    verdict, classes = dialog.inner_text(), dialog.get_attribute("class") or ""
    assert "validation-success" in classes, f"nbgrader's Validate button reported: {verdict}"
    page.locator(".jp-Dialog .jp-mod-accept").click()
    wait_for(page, "() => !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')", "the notebook to be saved")
    page.close()

    # The file JupyterLab saved holds exactly the typed answers and the outputs the browser showed.
    saved_path = server["lessons"] / LESSON / f"{LESSON}.ipynb"
    saved = nbformat.read(saved_path, as_version=4)
    for index, answer in answer_cells.items():
        assert saved.cells[index].source == answer, f"cell {index} was not saved as typed"
    for index, cell in enumerate(saved.cells):
        if cell.cell_type == "code":
            assert cell.execution_count is not None, f"cell {index} was not run"
            assert not any(out.output_type == "error" for out in cell.outputs), f"cell {index} saved an error"
    for index in figures:
        assert any("image/png" in out.get("data", {}) for out in saved.cells[index].outputs)

    # Then the terminal steps of the README: `make check`, `make submit`.
    [check] = selfcheck.main(lessons=[LESSON], notebook=saved_path)
    assert check.ok, selfcheck.report(check)
    handed_in = submit.main(lesson=LESSON, name="Ada Lovelace", notebook=saved_path, out=tmp_path)
    printed = capsys.readouterr().out
    assert selfcheck.HONEST_PASS in printed and "WARNING" not in printed, printed
    assert re.match(SUBMISSION_REGEXP, handed_in.name).group("student_id") == "ada_lovelace"
    assert handed_in.read_bytes() == saved_path.read_bytes()
    assert os.listdir(tmp_path) == [handed_in.name]
