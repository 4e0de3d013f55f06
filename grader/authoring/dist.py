"""Write the student distribution of the course to a folder of its own (`make dist DIR=...`).

A graded course keeps this repository private (it holds the solutions, the trusted specs and,
once grading starts, the gradebook) and publishes only the distribution: the released notebooks
and the student commands, which need Python and make and nothing of this repository. In it:

    lessons/<id>/<id>.ipynb        the released notebooks, as in lessons/ here
    .course/releases/<id>.ipynb    a pristine, read-only copy of each: the self-check's originals
    .course/manifest.json          SHA-256 of every pristine release and of every file of code
    .course/deadlines.json         each lesson's deadline as the late policy has it when publishing
                                   (no extensions: `make check`, `make submit` show it; grader/student/deadline.py)
    grader/                        the student commands: lab, check, submit (`python -m grader`)
    lesson_helpers.py              the helper module every lesson imports (lab and check put it in reach)
    nbgrader_config.py             the settings the self-check and the Validate button share with grading
    Makefile, requirements*.txt    `make lab`, `make check`, `make submit`, `make test` (its own .venv)
    README.md, tests/              the students' README, and the distribution's `make test`

The code is not a fork, and nothing is cut out of a course file. The student code is the package
grader/student/, which imports nothing of the instructor's (its paths and lessons are in
grader/student/layout.py): it, grader/cell_roles.py, grader/errors.py, grader/safe_text.py,
grader/jupyter/, lesson_helpers.py and the files of grader/authoring/dist_template/ (the Makefile,
grader/__init__.py and grader/__main__.py, the distribution's tests) are copied byte for byte.
Generated are only what holds the course's settings: nbgrader_config.py (the course configuration's
values for the configurables the Validator runs), requirements*.txt (the course's requirements for
the packages students need, read with `packaging`), README.md (its lesson table) and
.course/manifest.json. The one thing a
distribution does differently is where the self-check takes each lesson's locked cells from: not
solutions/, which it does not have, but .course/releases/ (grader/student/originals.py).

Building refuses a lesson that hands out a working answer to an earlier exercise still open under
the late policy's deadlines (grader/authoring/handouts.py, dist_steps.refuse_open_answers), and a
stale release (lessons/<id> must equal what `make release` makes now), so that the self-check
gives the same verdicts as in the course. The output is the same bytes for
the same course. Rebuilding into an earlier distribution replaces it, keeping only its `.git`
and `.venv`; `--check` reports how a folder differs from a fresh build without writing anything.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from traitlets.config import Config, PyFileConfigLoader

from grader import markers
from grader.authoring import dist_steps
from grader.course import LESSONS, ROOT, nbgrader_config, select_lessons, student_notebook
from grader.errors import DistributionRefused, NotReleased
from grader.extras import LESSON_EXTRAS
from grader.grading.policy.late import LatePolicy
from grader.student.layout import DEADLINES_PATH, JUPYTER_CONFIG, LESSON_HELPERS, MANIFEST_PATH, RELEASES_PATH

GRADER = ROOT / "grader"
TEMPLATE = Path(__file__).resolve().parent / "dist_template"

# The packages of requirements.in that students need (their requirements are copied with their bounds).
STUDENT_REQUIREMENTS = ("jupyterlab", "numpy", "matplotlib", "ipywidgets", "nbgrader", "nbformat", "nbclient")

KEPT_ON_REBUILD = (".git", ".venv")  # of an earlier distribution in the output folder
IGNORED = re.compile(r"(^|/)(\.ipynb_checkpoints|__pycache__)(/|$)|\.pyc$")
MARKERS = markers.any_marker()


# ---------------------------------------------------------------- what the distribution holds

def files_in(folder: Path) -> list[Path]:
    """Every file below `folder` that a distribution may ship (caches and checkpoints left out), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not IGNORED.search(p.as_posix()))


def verbatim_files() -> dict[str, Path]:
    """Distribution path -> course file, for every file shipped unchanged (lessons aside)."""
    files = {f"grader/{name}": GRADER / name for name in ("errors.py", "cell_roles.py", "safe_text.py")}
    files[LESSON_HELPERS.name] = LESSON_HELPERS
    # the student code, and commands.mk: the student rules that both Makefiles include
    files |= {f"grader/student/{p.name}": p for p in files_in(GRADER / "student")}
    files |= {f"grader/jupyter/{p.relative_to(JUPYTER_CONFIG).as_posix()}": p for p in files_in(JUPYTER_CONFIG)}
    template = {p.relative_to(TEMPLATE).as_posix(): p for p in files_in(TEMPLATE) if p.name != "README.md"}
    files |= {(".gitignore" if path == "gitignore" else path): p for path, p in template.items()}
    return dict(sorted(files.items()))


def student_config_sections() -> list[str]:
    """The configurables whose settings the self-check and the Validate button read.

    The Validator, each preprocessor it runs, IgnorePattern (the self-check drops the stderr that
    grading ignores), and the classes they inherit settings from.
    """
    from nbgrader.preprocessors import IgnorePattern
    from nbgrader.validator import Validator
    from traitlets.config import Configurable

    classes = [Validator, *Validator().preprocessors, IgnorePattern]
    names = [k.__name__ for c in classes for k in c.__mro__ if issubclass(k, Configurable) and k is not Configurable]
    return list(dict.fromkeys(names))


def student_config(config: Config | None = None) -> dict[str, dict]:
    """section -> settings: the course configuration's values for `student_config_sections()`."""
    config = config if config is not None else nbgrader_config()
    return {name: dict(config[name]) for name in student_config_sections() if name in config and config[name]}


def config_module() -> str:
    """nbgrader_config.py of the distribution, read by the self-check and by the Validate button."""
    lines = ['"""nbgrader settings of the student distribution: those that the self-check and Validate read.',
             "",
             "Generated by the course's `make dist` from the course's nbgrader configuration, so that the",
             "per-cell time limit, the kernel's arguments and the stderr that grading ignores are grading's.",
             '"""',
             "",
             "c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)",
             ""]
    for section, settings in student_config(nbgrader_config()).items():
        for name, value in settings.items():
            text = repr(value)
            if ast.literal_eval(text) != value:
                raise DistributionRefused(f"the course's {section}.{name} is not a plain value; dist.py cannot copy it")
            lines.append(f"c.{section}.{name} = {text}")
    return "\n".join(lines) + "\n"


def load_config(folder: Path) -> Config:
    """The nbgrader configuration in `folder`/nbgrader_config.py (a distribution's, say)."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()


def read_requirements(path: Path) -> dict[str, Requirement]:
    """Normalised package name -> requirement, for every requirement of the pip requirements file `path`.

    Comments, blank lines and options (`-c requirements.txt`) are skipped.
    """
    found = {}
    for line in path.read_text().splitlines():
        text = re.sub(r"(^|\s)#.*", "", line).strip()
        if text and not text.startswith("-"):
            requirement = Requirement(text)
            found[canonicalize_name(requirement.name)] = requirement
    return found


def requirements() -> str:
    """requirements.txt of the distribution: the course's requirements for the packages students need."""
    course = read_requirements(ROOT / "requirements.in")
    missing = [name for name in STUDENT_REQUIREMENTS if name not in course]
    if missing:
        raise DistributionRefused(f"requirements.in no longer lists {', '.join(missing)}: "
                                  "update grader/authoring/dist.py")
    return ("# What the lessons, `make lab`, `make check` and `make submit` need; `make` installs it into .venv.\n"
            "# nbgrader provides the Validate button and the self-check's machinery. Lower bounds are the versions\n"
            f"# the course was built and tested with. Also requirements-torch.txt, for {_torch_lessons()}.\n"
            + "".join(f"{course[name]}\n" for name in STUDENT_REQUIREMENTS))


def _torch_lessons() -> str:
    """The lessons that need the torch extra, as the README names them ("Lesson 5 (05-pytorch-module)")."""
    return ", ".join(f"Lesson {int(lesson[:2])} ({lesson})" for lesson, extras in LESSON_EXTRAS.items()
                     if "torch" in extras)


def torch_requirements() -> str:
    """requirements-torch.txt of the distribution: every requirement of the course's torch extra."""
    return (f"# The optional PyTorch extra, for {_torch_lessons()} only: `make torch` installs it into\n"
            "# .venv. The other lessons do without it. On Linux, PyPI's torch bundles CUDA (several GB).\n"
            + "".join(f"{requirement}\n" for requirement in read_requirements(ROOT / "requirements-torch.in").values()))


def readme(lessons: list[str]) -> str:
    rows = ["| lesson | notebook |", "| --- | --- |"]
    for lesson in lessons:
        nb = nbformat.read(student_notebook(lesson), as_version=4)
        first = nb.cells[0].source if nb.cells else ""
        title = next((line.lstrip("# ").strip() for line in first.splitlines() if line.startswith("# ")), lesson)
        rows.append(f"| {title} | `lessons/{lesson}/{lesson}.ipynb` |")
    return (TEMPLATE / "README.md").read_text().replace("@LESSONS@", "\n".join(rows))


# ---------------------------------------------------------------- building

def stale_lessons(lessons: list[str]) -> list[str]:
    """The lessons whose lessons/<id>/<id>.ipynb is missing or differs from a fresh in-memory release."""
    from grader.authoring.release_in_memory import build_release

    stale = []
    for lesson in lessons:
        path = student_notebook(lesson)
        if not path.is_file():
            stale.append(lesson)
            continue
        built, committed = build_release(lesson), nbformat.read(path, as_version=4)
        if [(c.cell_type, c.source, c.metadata) for c in built.cells] != [
                (c.cell_type, c.source, c.metadata) for c in committed.cells]:
            stale.append(lesson)
    return stale


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def deadlines(lessons: list[str], policy: LatePolicy) -> bytes:
    """.course/deadlines.json: each of `lessons`' deadline under `policy`, in UTC; no extension (one
    distribution goes to every student: a list of extensions would tell each who else has one)."""
    found = {lesson: when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") for lesson in lessons
             if (when := policy.deadline(lesson)) is not None}
    return (json.dumps(found, indent=1, sort_keys=True) + "\n").encode()


def contents(lessons: list[str] | None = None, kept: dict[str, dict[str, bytes]] | None = None,
             policy: LatePolicy | None = None) -> dict[str, bytes]:
    """Distribution path -> bytes of every file of the distribution, manifest included; the deadlines
    are `policy`'s (default: the course's late policy now).

    `kept` (lesson -> its files as an earlier distribution published them) are written as they
    were instead of from lessons/ (grader/authoring/dist_steps.py).
    """
    lessons = select_lessons(lessons)
    kept = kept or {}
    stale = stale_lessons([lesson for lesson in lessons if lesson not in kept])
    if stale:
        raise NotReleased(f"lessons/ is not the current release of {', '.join(stale)}: run `make release` first. If "
                          "anyone worked in lessons/ here, it refuses and names those notebooks; `make release "
                          "FORCE=1` then backs each up to lessons/<id>.backup-<date>.ipynb before replacing it")
    files: dict[str, bytes] = {path: source.read_bytes() for path, source in verbatim_files().items()}
    generated = {"nbgrader_config.py": config_module(), "requirements.txt": requirements(),
                 "requirements-torch.txt": torch_requirements(), "README.md": readme(lessons)}
    files |= {path: text.encode() for path, text in generated.items()}
    code = dict(sorted(files.items()))
    releases = {}
    for lesson in lessons:
        if lesson in kept:
            files |= kept[lesson]
            releases[lesson] = sha256(kept[lesson][f"{RELEASES_PATH}/{lesson}.ipynb"])
            continue
        for path in sorted(p for p in (LESSONS / lesson).rglob("*") if p.is_file()):
            if not IGNORED.search(path.as_posix()):
                files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
        data = student_notebook(lesson).read_bytes()
        files[f"{RELEASES_PATH}/{lesson}.ipynb"] = data
        releases[lesson] = sha256(data)
    manifest = {"course": "Attention from Scratch", "releases": releases,
                "files": {path: sha256(data) for path, data in code.items()
                          if path.startswith(("grader/", "tests/"))
                          or path in ("nbgrader_config.py", "Makefile", LESSON_HELPERS.name)}}
    files[MANIFEST_PATH] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    files[DEADLINES_PATH] = deadlines(lessons, policy if policy is not None else LatePolicy(config=nbgrader_config()))
    leaks = [path for path, data in files.items() if MARKERS.search(data.decode("utf-8", "replace"))]
    if leaks:  # the tests scan for far more (tests/integration/test_dist_leaks.py); this one costs nothing
        raise DistributionRefused(f"refusing to write a distribution with nbgrader markers in {', '.join(leaks)}")
    return dict(sorted(files.items()))


def _refuse(out: Path) -> None:
    """Refuse an output folder that is not empty, new or an earlier distribution."""
    if out == ROOT or ROOT in out.parents or out in ROOT.parents:
        raise DistributionRefused(f"write the distribution outside the course repository, not to {out}: "
                                  "it is published on its own, and the course's tests and tools must not pick it up")
    if out.exists() and not out.is_dir():
        raise DistributionRefused(f"{out} is a file, not a folder")
    earlier = (out / MANIFEST_PATH).is_file()
    if out.is_dir() and any(p.name not in KEPT_ON_REBUILD for p in out.iterdir()) and not earlier:
        raise DistributionRefused(f"{out} is not empty and holds no earlier distribution ({MANIFEST_PATH}): "
                                  "choose another DIR")


def _prepare(out: Path) -> None:
    """Make `out` an empty folder to write to; an earlier distribution is replaced but its .git and .venv."""
    _refuse(out)
    out.mkdir(parents=True, exist_ok=True)
    for entry in [p for p in out.iterdir() if p.name not in KEPT_ON_REBUILD]:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def write(out: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if path.startswith(RELEASES_PATH + "/"):
            target.chmod(0o444)  # the pristine releases: read-only, and checked against the manifest


def differences(out: Path, files: dict[str, bytes] | None = None) -> list[str]:
    """How the distribution in `out` differs from what `make dist` writes now ([] if it does not).

    Its `.git`, `.venv`, `submissions/` and caches are not compared.
    """
    files = contents() if files is None else files
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    skipped = re.compile(r"^(\.git|\.venv|submissions)(/|$)")
    present = {p for p in present if not skipped.search(p) and not IGNORED.search(p)}
    found = [f"{path}: missing" for path in sorted(set(files) - present)]
    found += [f"{path}: not part of the distribution" for path in sorted(present - set(files))]
    found += [f"{path}: differs" for path in sorted(set(files) & present) if (out / path).read_bytes() != files[path]]
    return found


def main(*, out: Path, lessons: list[str] | None = None, check: bool = False,
         republish: list[str] | None = None, now: datetime | None = None, config: Config | None = None) -> list[str]:
    """Write the student distribution of `lessons` (default: all) to `out`; return its files.

    Lessons that the distribution already in `out` published are kept exactly as published, and
    stay in it even when `lessons` leaves them out, except those in `republish`, which are written
    from the current release (grader/authoring/dist_steps.py). A lesson written from the release
    that hands out a working answer to an exercise not yet closed at `now` (default: the current
    time) under the late policy of `config` (default: the course's) is refused, before anything is
    written. With `check`, write nothing and return how `out` differs from a fresh distribution instead.
    """
    out = Path(out).expanduser().resolve()
    policy = LatePolicy(config=config if config is not None else nbgrader_config())
    if check:
        return differences(out, contents(lessons, policy=policy))
    _refuse(out)  # before the minute of building, not after
    shipped = dist_steps.published(out, MANIFEST_PATH, RELEASES_PATH)
    earlier = {lesson: files for lesson, files in shipped.items() if lesson not in (republish or [])}
    lessons = select_lessons(sorted({*select_lessons(lessons), *shipped}))
    dist_steps.refuse_open_answers([lesson for lesson in lessons if lesson not in earlier], policy,
                                   now if now is not None else datetime.now(UTC))
    if shipped:
        changed = [lesson for lesson in earlier if student_notebook(lesson).is_file()
                   and student_notebook(lesson).read_bytes() != earlier[lesson][f"{RELEASES_PATH}/{lesson}.ipynb"]]
        for lesson in changed:
            print(f"{lesson}: kept as published (its release changed since; students keep what they have). "
                  f"`--republish {lesson}` replaces it.")
    files = contents(lessons, kept=earlier, policy=policy)
    with tempfile.TemporaryDirectory(prefix="dist-") as scratch:  # nothing half-written if a file fails
        write(Path(scratch), files)
        _prepare(out)
        for entry in Path(scratch).iterdir():
            shutil.move(str(entry), out / entry.name)
    return list(files)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write the distribution to (outside the repository)")
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--lessons", dest="lesson_spec", metavar="LESSONS",
                        help="the lessons opened so far: ids, numbers or ranges, e.g. 01-03 (default: all)")
    parser.add_argument("--republish", action="append", default=[], metavar="LESSON",
                        help="write this lesson from the current release even if the distribution already has it")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; list how --out differs from a fresh distribution (exit 1 if it does)")


def run(args: argparse.Namespace) -> int | None:
    """Write the distribution as `args` say; with --check, the exit status: 1 if `--out` differs, else 0."""
    lessons = [*args.lessons, *(dist_steps.parse(args.lesson_spec) if args.lesson_spec else [])] or None
    if args.check:
        found = main(out=args.out, lessons=lessons, check=True)
        print("\n".join(found) if found else f"{args.out} is exactly what `make dist` writes now")
        return 1 if found else 0
    files = main(out=args.out, lessons=lessons, republish=args.republish)
    print(f"wrote the student distribution to {args.out} ({len(files)} files): publish that folder as it is. "
          f"Students run `make lab`, `make check`, `make submit` there; see its README.md.")
