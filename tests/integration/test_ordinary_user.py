"""The ordinary-user route: one attack of each sandbox class graded by a uid that is not root, judged from outside.

Run as root (the development and CI machines), the test grades a small hostile batch as an ordinary
user would: `setpriv` drops to a uid that no account owns, with no groups. It runs inside a mount
namespace that bubblewrap makes as root (no user namespace) and that shows the machine as it is,
except that a folder other users cannot enter (`/root`, where the environment lives on the
development and CI machines) shows only the Python environment and this repository. The grader then
has what an ordinary user has: bwrap builds the kernels' namespaces in a user namespace of its own, no
cgroup can be made, and each kernel is the grader's uid on the host.

Every honest student and every attack must keep its exact score, the summary must say `WEAKER` for
the cgroup and for the uid, and every row must be flagged `no-cgroup` and `grader-uid`. Read from the
host while the batch runs: each kernel is the ordinary uid, never root.
"""

from __future__ import annotations

import csv
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.course import ROOT
from grader.sandbox.bwrap import SETPRIV, python_dirs
from tests.ordinary_user import as_ordinary_user, unused_uid, user_env
from tests.support import (
    batch_scores,
    hostile_cases,
    make_course,
    plant_key,
    points_of,
    unlink_key,
    write_download,
)

LESSON = "03-parallel-heads"  # the hostile suite's lesson
ATTEMPT = "20260115-100000"
pytestmark = pytest.mark.same_verdicts  # the hostile suite's verdicts, graded by an ordinary user

CELL_TIMEOUT = 30  # seconds per cell: without a cgroup the limit is wall time, and the batch runs beside others
# One attack of each class of tests/fixtures/hostile/sandbox.toml, and the kernel's uid against the
# grader's own processes and files, next to an honest student.
ATTACKS = ("memfd_memory", "shm_memory", "thread_burst", "fork_burst", "shm_channel_a", "shm_channel_b", "shm_disk",
           "keyrings", "inherited_descriptors", "huge_message", "cpu_starvation", "kill_every_process",
           "read_state_canary")


def sample_uids(grader: subprocess.Popen, stop: threading.Event, kernels: dict[int, set[int]],
                graders: dict[int, set[int]]) -> None:
    """Until `stop`, the host uids of every kernel process and every grading process under `grader`."""
    while not stop.is_set():
        try:
            tree = psutil.Process(grader.pid).children(recursive=True)
        except psutil.Error:
            tree = []
        for process in tree:
            try:
                command = " ".join(process.cmdline())
                if process.name() in ("bwrap", "setpriv"):  # the outer one is root's, by design; the kernels' are aside
                    continue
                if "ipykernel_launcher" in command:
                    kernels.setdefault(process.pid, set()).update(process.uids())
                elif "-m grader autograde" in command:
                    graders.setdefault(process.pid, set()).update(process.uids())
            except psutil.Error:
                pass
        time.sleep(0.1)


@pytest.fixture(scope="module")
def batch():
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("run as root, this test drops to an ordinary uid itself; run as an ordinary user, every kernel "
                    "test already grades this way")
    if not os.path.exists(SETPRIV):
        pytest.skip(f"no {SETPRIV} (util-linux) to drop to an ordinary uid")
    uid = unused_uid()
    root = Path(tempfile.mkdtemp(prefix="ordinary-user-"))
    try:
        home = root / "home"
        home.mkdir()
        wrapper = as_ordinary_user(uid, [*python_dirs(), sys.prefix, str(ROOT)])
        probe = subprocess.run([*wrapper, sys.executable, "-c", "from grader.sandbox.bwrap import probe; probe()"],
                               capture_output=True, text=True, env=user_env(home, uid), cwd=root, timeout=120)
        if probe.returncode != 0:
            pytest.skip(f"an ordinary user cannot start the sandbox here: {probe.stderr.strip()[-500:]}")
        yield grade(root, home, uid, wrapper)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def grade(root: Path, home: Path, uid: int, wrapper: list[str]) -> dict:
    course = make_course(root / "course", cell_timeout=CELL_TIMEOUT, lessons=[LESSON])
    token = secrets.token_hex(8)
    state = course.layout.term
    state.mkdir(parents=True, exist_ok=True)
    (state / "canary.txt").write_text(f"SECRET-state-{token}")
    values = {"token": token, "course": str(course.root), "state": str(state), "home": str(home), "repo": str(ROOT),
              "tmp_canary": "/nonexistent", "honest_secret": "", "listener": "http://127.0.0.1:9"}
    cases = {name: spec for name, spec in hostile_cases(values).items() if name in ("honest_reference", *ATTACKS)}
    assert len(cases) == len(ATTACKS) + 1, set(ATTACKS) - set(cases)
    release = course.release(LESSON)
    archive = root / "download.zip"
    write_download(archive, LESSON, release, cases, ATTEMPT)
    for path in (root, *root.rglob("*")):
        os.chown(path, uid, uid, follow_symlinks=False)
    key = plant_key(f"hostile-canary-{token}", f"SECRET-keyring-{token}")
    kernels: dict[int, set[int]] = {}
    graders: dict[int, set[int]] = {}
    stop = threading.Event()
    try:
        grader = subprocess.Popen([*wrapper, sys.executable, "-m", "grader", "autograde", LESSON, "--course",
                                   str(course.root), "--source", str(archive), "--workers", "2", "--timeout",
                                   str(CELL_TIMEOUT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=user_env(home, uid), cwd=root)
        sampler = threading.Thread(target=sample_uids, args=(grader, stop, kernels, graders), daemon=True)
        sampler.start()
        try:
            stdout, stderr = grader.communicate(timeout=1500)
        finally:
            stop.set()
            sampler.join()
    finally:
        if key > 0:
            unlink_key(key)
    with course.layout.grades_csv(LESSON).open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    log = course.layout.log(LESSON)
    outputs = {}
    for name in rows:
        path = course.layout.autograded_notebook(name, LESSON)
        if path.is_file():
            nb = nbformat.read(path, as_version=4)
            outputs[name] = "\n".join(nbformat.writes(nbformat.from_dict({"outputs": cell.get("outputs", [])}))
                                      for cell in nb.cells)
    return {"uid": uid, "token": token, "cases": cases, "release": release, "rows": rows, "outputs": outputs,
            "returncode": grader.returncode, "stdout": stdout, "stderr": stderr, "kernels": kernels,
            "graders": graders, "log": log.read_text(errors="replace") if log.is_file() else ""}


def test_the_summary_and_every_row_say_the_isolation_is_weaker(batch):
    assert batch["returncode"] == 0, batch["stdout"] + batch["stderr"][-3000:]
    summary = batch["stdout"]
    assert "WEAKER: kernels had no cgroup of their own (flag no-cgroup)" in summary, summary
    assert "WEAKER: kernels ran as the grader's own host uid" in summary, summary
    assert set(batch["rows"]) == set(batch["cases"]), batch["rows"].keys()
    for name, row in batch["rows"].items():
        flags = row["notes"].split("; ")
        assert row["status"] == "graded" and "no-cgroup" in flags and "grader-uid" in flags, (name, row)


def test_every_submission_keeps_its_exact_score(batch):
    wrong = {}
    for name, spec in batch["cases"].items():
        row = batch["rows"][name]
        got = {grade_id: float(row[grade_id]) for grade_id in points_of(batch["release"])}
        missing = [flag for flag in spec.get("flags", []) if flag not in row["notes"]]
        if got != batch_scores(LESSON, batch["release"], spec) or missing:
            wrong[name] = (got, row["notes"], missing)
    assert not wrong, wrong


def test_every_kernel_is_the_ordinary_uid_never_root(batch):
    """Read from the host: an ordinary user has no other uid to give a kernel, and never root's."""
    uid = batch["uid"]
    assert len(batch["kernels"]) >= len(batch["cases"]) // 2, f"the sampler saw only {len(batch['kernels'])} kernels"
    assert set().union(*batch["kernels"].values()) == {uid}, batch["kernels"]
    assert batch["graders"] and set().union(*batch["graders"].values()) == {uid}, batch["graders"]


def test_no_attack_obtained_anything(batch):
    token = batch["token"]
    for where, text in (("stdout", batch["stdout"]), ("stderr", batch["stderr"]), ("log", batch["log"])):
        assert f"PWNED-{token}" not in text and "\x1b[2J" not in text, f"a kernel wrote into the grader's {where}"
    for name, outputs in batch["outputs"].items():
        assert f"SECRET-state-{token}" not in outputs and f"SECRET-keyring-{token}" not in outputs, name
        assert "found leftover" not in outputs, name  # a kernel read what another left in /dev/shm
    assert "read b'" not in batch["outputs"]["keyrings"] and "listed" not in batch["outputs"]["keyrings"]
    assert f"PWNED-{token}" not in Path("/proc/keys").read_text()
    assert not list(Path("/dev/shm").glob(f"PWNED-{token}*"))


def test_no_process_of_the_ordinary_uid_is_left(batch):
    left = [process.pid for process in psutil.process_iter(["uids"])
            if process.info["uids"] and process.info["uids"].real == batch["uid"]]
    assert not left, left
