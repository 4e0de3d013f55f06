"""Kernels forked from the warm template: the same confinement as a cold kernel, and nothing shared between them."""

from __future__ import annotations

import json
import uuid
from unittest import mock

import psutil
from nbformat.v4 import new_code_cell, new_notebook

from grader.pipeline.guarded_execute import GuardedExecute
from grader.sandbox import template

LIMITS = {"memory_limit": 3 * 1024**3, "file_size_limit": 8 * 1024**2, "max_processes": 32}

# What a kernel can tell about its confinement, as one JSON line.
VIEW = """
import json, os, resource, socket, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "host": socket.gethostname(),
    "cwd": os.getcwd(), "env": sorted(os.environ), "path": sys.path,
    "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
    "no_new_privs": status["NoNewPrivs"].strip(),
    "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)],
    "tmp": len(os.listdir("/tmp")), "home": sorted(os.listdir(os.path.expanduser("~"))),
    "work": sorted(os.listdir(".")),
    "mounts": sorted({m for m in (line.split()[4] for line in open("/proc/self/mountinfo"))
                      if not m.startswith(("/tmp/grader-", "/opt"))}),
    "opt": os.listdir("/opt") if os.path.isdir("/opt") else [],
    "writable_env": os.access(sys.prefix, os.W_OK),
}))
"""


def run(*sources: str, warm: bool = True, path: str = "/tmp") -> list[str]:
    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb, _ = GuardedExecute(timeout=60, kernel_name="python3", warm_kernels=warm, **LIMITS).preprocess(
        nb, {"metadata": {"path": path}})
    return ["".join(o.get("text", "") + o.get("evalue", "") for o in cell.outputs) for cell in nb.cells]


def test_a_forked_kernel_is_confined_exactly_as_a_cold_one(tmp_path):
    (tmp_path / "data.txt").write_text("a file beside the notebook")
    warm, cold = (json.loads(run(VIEW, warm=w, path=str(tmp_path))[0]) for w in (True, False))
    assert warm == cold
    assert warm["uid"] == 65534 and warm["caps"] == ["0000000000000000"] * 5 and warm["no_new_privs"] == "1"
    assert warm["limits"][0] == [LIMITS["memory_limit"]] * 2
    assert warm["work"] == ["data.txt", "lesson_helpers.py"]  # the notebook's folder, and the module lessons import
    assert warm["writable_env"] is False


def test_nothing_of_one_kernel_reaches_the_next():
    token = uuid.uuid4().hex  # names this test's sleeper: the hostile suite may run one like it meanwhile
    first = f"""
import numpy, os, subprocess, sys
for folder in ("/tmp", os.path.expanduser("~"), os.getcwd()):
    open(os.path.join(folder, "left-behind"), "w").write("x")
numpy.allclose = lambda *a, **k: True
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # {token}"], start_new_session=True)
print(numpy.random.rand(), sleeper.pid)
"""
    second = """
import glob, numpy, os
print(numpy.random.rand(), glob.glob("/tmp/*left*") + glob.glob(os.path.expanduser("~/*left*")) + glob.glob("*left*"),
      numpy.allclose(0, 1), sorted(p for p in os.listdir("/proc") if p.isdigit()))
"""
    draw, _ = run(first)[0].split()
    assert not [p for p in psutil.process_iter(["cmdline"]) if token in " ".join(p.info["cmdline"] or [])]
    second_draw, rest = run(second)[0].split(" ", 1)
    assert second_draw != draw  # each kernel draws from a fresh random state, not the template's
    assert rest.strip() == "[] False ['1']"


def test_where_the_template_cannot_start_kernels_start_cold_and_say_so(caplog):
    with mock.patch.object(template, "Template", side_effect=template.TemplateError("no template here")), \
            mock.patch.dict(template._templates, clear=True):
        out = run("import os; print(os.getpid())")
    assert out == ["2\n"]  # under bwrap's own init: a cold kernel
    assert "starting a cold kernel: no template here" in caplog.text


def test_a_kernel_cannot_signal_the_template_or_a_kernel_beside_it():
    attack = """
import os, signal
for kill in (lambda: os.kill(0, signal.SIGKILL), lambda: os.killpg(os.getpgrp(), signal.SIGKILL)):
    try:
        kill()
    except OSError:
        pass
print("alive")
"""
    before = {key: t.process.pid for key, t in template._templates.items()}
    assert run(attack) == ["alive\n"]  # PID 1 of its namespace ignores it; nothing else is in its group
    assert all(t.alive() for t in template._templates.values()) and before.items() <= {
        key: t.process.pid for key, t in template._templates.items()}.items()
