"""Throughput of `python -m grader autograde` against stock `nbgrader autograde`, same submissions.

    .venv/bin/python -m benchmarks.autograde_throughput [--lesson 03-parallel-heads] [-n 60] [--rounds 2]

Makes N submissions of a lesson from its release, cycling through the lesson's fixture students
(tests/fixtures/<lesson>/submissions.toml: the reference answers, the untouched release and the
common mistakes, so a mix of right and wrong answers; fixtures that only burn a cell time-out,
such as an infinite loop, are left out by default). Two throw-away courses get identical copies.
Then, in the same run, it grades them with

- stock nbgrader: one sequential `nbgrader autograde <lesson>` command, then (timed separately)
  one `nbgrader generate_feedback <lesson>`;
- ours: one `python -m grader autograde <lesson>` (autograde, feedback, CSV and plot, every kernel
  in the sandbox), and the same without the sandbox (`--unsafe-no-sandbox`), to price it,

- the floor: the same submissions' cells alone, run in kernels started beforehand (one per
  worker, outside the sandbox, with the graded kernels' environment and arguments, so the same
  figure settings), with nothing else: no kernel start, no nbgrader, no feedback;

checks that the gradebooks hold identical scores for every test cell of every submission, and
prints submissions per minute, CPU seconds per submission (read from a cpuacct cgroup made for
each command, which its kernels' cgroups nest under: nbgrader, workers and kernels, nothing else;
where none can be made, the machine's busy time during the run), and the ratios, stock
cold over the floor among them: the bound on ours over stock, since no grader beats the floor. Every run
uses the course's nbgrader configuration (every kernel cold, in its sandbox), so they grade exactly
alike. Timings include each command's start-up. Last, the latency of `python -m grader check
<lesson>` (what `make check` runs). Other work on the machine skews the figures: the load average
is printed before and after. The machine's own speed drifts too, within minutes: `--rounds 2` runs
everything twice, the second time in reverse order, and takes the ratios of the summed times, so
that a steady drift cancels.

`--switches soup` prices the grader's optimisations instead: it grades the batch
with all of them on, then with each one off in turn (benchmarks/switches.py), `--rounds` times,
every other round in reverse order, and prints each one's share of the grading CPU per submission.
An optimisation is kept only if it saves at least 10% of that.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client import KernelManager
from nbgrader.api import Gradebook

from benchmarks.batch import add_batch_arguments, busy_cpu, load, submit
from grader.course import REPO, nbgrader_config, select_lessons
from grader.grading.running.supervisor import default_workers
from tests.support import Course, make_course

CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where mounted


def _cpu_cgroup() -> Path | None:
    """A new cpuacct cgroup under this process's own, or None where none can be made."""
    own = next((line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                if "cpuacct" in line.split(":", 2)[1].split(",")), None)
    if own is None or not CPUACCT.is_dir():
        return None
    folder = CPUACCT / own.lstrip("/") / f"benchmark-{os.getpid()}-{time.monotonic_ns()}"
    try:
        folder.mkdir()
    except OSError:
        return None
    return folder


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the command and every process it started, its stdout).

    The command runs in a cpuacct cgroup of its own (its kernels' cgroups nest under it); where
    none can be made, the CPU is the machine's busy time meanwhile, other work included."""
    group = _cpu_cgroup()

    def join() -> None:
        (group / "cgroup.procs").write_text(str(os.getpid()))

    before, start = busy_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, preexec_fn=join if group else None)
    seconds = time.monotonic() - start
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        with contextlib.suppress(OSError):
            group.rmdir()
    else:
        cpu = busy_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:4])} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, cpu, done.stdout


def run_cells(paths: list[str], env: dict[str, str], arguments: list[str], timeout: int) -> tuple[float, float]:
    """(wall, CPU) seconds of running the code cells of `paths` in one kernel started beforehand
    with the graded kernels' environment and arguments (so the same figure settings), over IPC
    sockets as the graded kernels are."""
    sockets = tempfile.mkdtemp(prefix="floor-kernel-")
    km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
    km.start_kernel(env={**os.environ, **env}, extra_arguments=arguments)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        pid = km.provisioner.pid
        import psutil

        def cpu() -> float:
            times = psutil.Process(pid).cpu_times()
            return time.process_time() + times.user + times.system + times.children_user + times.children_system

        start, used = time.monotonic(), cpu()
        for path in paths:
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "code":
                    kc.execute_interactive(cell.source, timeout=timeout, output_hook=lambda msg: None,
                                           allow_stdin=False)
        return time.monotonic() - start, cpu() - used
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(sockets, ignore_errors=True)


def floor(course: Course, lesson: str, students: list[str], workers: int, timeout: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the floor: every submission's cells, `workers` kernels side by side."""
    from concurrent.futures import ProcessPoolExecutor

    config = nbgrader_config(course.root)
    env = {**dict(config.GuardedExecute.get("kernel_env", {})), "NBGRADER_EXECUTION": "autograde"}
    arguments = [*config.Execute.get("extra_arguments", []), *config.GuardedExecute.get("shortcut_arguments", [])]
    paths = [str(course.layout.submitted_notebook(student, lesson)) for student in students]
    shares = [paths[index::workers] for index in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(run_cells, shares, [env] * workers, [arguments] * workers, [timeout] * workers))
    return max(wall for wall, _ in done), sum(cpu for _, cpu in done)


def scores(course: Course, lesson: str, students: list[str]) -> dict[str, dict[str, float | None]]:
    with Gradebook(f"sqlite:///{course.gradebook}") as gradebook:
        return {student: {g.name: g.score for g in gradebook.find_submission_notebook(lesson, lesson, student).grades}
                for student in students}


def main(*, lesson: str, count: int, workers: int | None, timeout: int, exclude: set[str], keep: Path | None,
         rounds: int = 1) -> float:
    """Run the comparison `rounds` times (every other round in reverse order); return ours/stock (cold
    kernels) throughput ratio over all rounds, autograde only."""
    [lesson] = select_lessons([lesson])
    with tempfile.TemporaryDirectory(prefix="autograde-bench-") as scratch:
        root = keep or Path(scratch)
        names = ("stock", "ours", "bare")
        courses = {name: make_course(root / name, cell_timeout=timeout) for name in names}
        students = submit(list(courses.values()), lesson, count, exclude)
        cores = os.cpu_count()
        workers = workers or default_workers()
        print(f"{lesson}: {len(students)} submissions, {cores} cores, {workers} workers, "
              f"load average {load()} (1/5/15 min)")
        print(f"{'':<38}{'wall s':>7} {'subs/min':>8} {'CPU s/sub':>9}")

        def report(label: str, seconds: float, cpu: float) -> None:
            print(f"{label:<38}{seconds:7.1f} {60 * count / seconds:8.1f} {cpu / count:9.2f}   (load {load()})",
                  flush=True)

        nbgrader = [sys.executable, "-m", "nbgrader"]

        def stock(name: str, extra: list[str], label: str) -> float:
            course = courses[name]
            seconds, cpu, _ = timed([*nbgrader, "autograde", lesson, "--create", "--force", *extra], course.root)
            feedback_s, feedback_cpu, _ = timed([*nbgrader, "generate_feedback", lesson, "--force"], course.root)
            feedback.append(feedback_s)
            report(f"{label} (+ feedback {feedback_s:.0f} s)", seconds, cpu + feedback_cpu)
            return seconds

        def ours(name: str, extra: list[str], label: str) -> float:
            seconds, cpu, _ = timed([sys.executable, "-m", "grader", "autograde", lesson, "--course",
                                     str(courses[name].root), "--force", "--workers", str(workers), *extra], REPO)
            report(label, seconds, cpu)
            return seconds

        def cells_alone() -> float:
            seconds, cpu = floor(courses["ours"], lesson, students, workers, timeout)
            report("floor: the cells alone, kernels started", seconds, cpu)
            return seconds

        steps = {"stock": lambda: stock("stock", [], "stock nbgrader, cold kernels"),
                 "ours": lambda: ours("ours", [], "python -m grader autograde"),
                 "bare": lambda: ours("bare", ["--unsafe-no-sandbox"], "  the same, --unsafe-no-sandbox"),
                 "floor": cells_alone}
        times: dict[str, list[float]] = {name: [] for name in steps}
        feedback: list[float] = []  # stock's generate_feedback, after each of its autograde runs
        for round_ in range(rounds):
            if rounds > 1:
                print(f"round {round_ + 1} of {rounds}" + (", in reverse order" if round_ % 2 else ""))
            for name in steps if round_ % 2 == 0 else reversed(steps):
                times[name].append(steps[name]())
        if rounds > 1:
            for round_ in range(rounds):
                print(f"round {round_ + 1}: ours / stock cold {times['stock'][round_] / times['ours'][round_]:.2f}x, "
                      f"ours / the floor {times['ours'][round_] / times['floor'][round_]:.2f}x")
            print(f"over all {rounds} rounds (summed times, so that a drift in the machine's speed cancels):")
        runs = {name: sum(seconds) for name, seconds in times.items()}
        floor_s = runs["floor"]

        graded = {name: scores(course, lesson, students) for name, course in courses.items()}
        differ = [s for s in students if len({json.dumps(graded[name][s], sort_keys=True) for name in names}) > 1]
        print(f"scores identical in all three runs for {len(students) - len(differ)} of {len(students)} submissions")
        for student in differ[:10]:
            print(f"  {student}: " + "; ".join(f"{name} {graded[name][student]}" for name in names))
        ratio = runs["stock"] / runs["ours"]
        print(f"throughput, ours / stock nbgrader with cold kernels:      {ratio:.2f}x")
        print(f"  counting stock's generate_feedback too (ours includes it): "
              f"{(runs['stock'] + sum(feedback)) / runs['ours']:.2f}x")
        print(f"ours / the floor (wall):                                  {runs['ours'] / floor_s:.2f}x")
        print(f"stock nbgrader with cold kernels / the floor (wall):      {runs['stock'] / floor_s:.2f}x"
              "   (no grader can beat the floor: the most any could reach over stock in this run)")
        print(f"cost of the sandbox (wall, sandboxed / not):              {runs['ours'] / runs['bare']:.2f}x")
        answered = next((s for s in students if s.endswith("_reference")), students[0])
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "grader", "check", lesson, "--notebook",
                        str(courses["ours"].layout.submitted_notebook(answered, lesson))], cwd=REPO,
                       capture_output=True)
        print(f"latency of `make check LESSON={lesson}` on an answered notebook: {time.monotonic() - start:.1f} s")
        if differ:
            raise SystemExit(1)
        return ratio


def price_switches(*, lesson: str, count: int, workers: int | None, timeout: int, exclude: set[str],
                   switches: list[str], rounds: int) -> dict[str, float]:
    """Grade one batch with every optimisation on, then with each of `switches` off, `rounds` times
    (every other round in reverse order); return each switch's saving: 1 - CPU on / CPU off."""
    [lesson] = select_lessons([lesson])
    with tempfile.TemporaryDirectory(prefix="autograde-switches-") as scratch:
        course = make_course(Path(scratch) / "course", cell_timeout=timeout)
        students = submit([course], lesson, count, exclude)
        workers = workers or default_workers()
        print(f"{lesson}: {len(students)} submissions, {workers} workers, load average {load()} (1/5/15 min)")
        configurations = ["none", *switches]
        cpu: dict[str, float] = dict.fromkeys(configurations, 0.0)
        for round_ in range(rounds):
            for name in configurations if round_ % 2 == 0 else reversed(configurations):
                seconds, used, _ = timed([sys.executable, "-m", "benchmarks.switches", name, "autograde", lesson,
                                          "--course", str(course.root), "--force", "--workers", str(workers)], REPO)
                cpu[name] += used
                print(f"round {round_ + 1}, {'all on' if name == 'none' else name + ' off':<20} {seconds:7.1f} s wall "
                      f"{used / len(students):6.2f} CPU s/sub   (load {load()})", flush=True)
        savings = {name: 1 - cpu["none"] / cpu[name] for name in switches}
        print(f"over {rounds} rounds, CPU s per submission with all on: {cpu['none'] / rounds / len(students):.2f}")
        for name, saving in savings.items():
            print(f"  {name:<16} off: {cpu[name] / rounds / len(students):.2f} CPU s/sub; "
                  f"on saves {100 * saving:5.1f}% "
                  f"(on / off {cpu['none'] / cpu[name]:.3f})" + ("" if saving >= 0.10 else "   under 10%"))
        return savings


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_batch_arguments(parser, count=60)
    parser.add_argument("--workers", type=int, help="our worker processes (default: the grader's)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every configuration this many times, every other round in reverse order, "
                             "and take the ratios of the summed times (default: 1)")
    parser.add_argument("--switches", help="comma-separated optimisations to price (benchmarks/switches.py) "
                                           "instead of the comparison with stock nbgrader")
    args = parser.parse_args()
    if args.switches:
        price_switches(lesson=args.lesson, count=args.submissions, workers=args.workers, timeout=args.timeout,
                       exclude=set(args.exclude), switches=args.switches.split(","), rounds=args.rounds)
        raise SystemExit(0)
    main(lesson=args.lesson, count=args.submissions, workers=args.workers, timeout=args.timeout,
         exclude=set(args.exclude), keep=args.keep, rounds=args.rounds)
