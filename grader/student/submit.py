"""Hand in a lesson: copy your notebook into submissions/, named for your instructor's grading.

`make submit LESSON=<id> NAME=<your name>` (or `python -m grader submit <id> --name <name>`) first
runs the self-check (`make check`) and prints it; if it does not pass, it warns and writes the
file anyway, since an incomplete notebook still earns the points it earns. The file is the lesson
notebook alone, saved as you left it (save it in JupyterLab first), under the name nbgrader's
`zip_collect` reads from an LMS download:

    submissions/<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb

(grader/student/submission_names.py; the instructor's collect step parses it with the
SUBMISSION_REGEXP there). The student id is your name made safe for a file name and an nbgrader
id: accents dropped, lower case, every run of other characters one underscore ("Zoë O'Brien"
becomes `zoe_o_brien`; "李雷" stays `李雷`, and the instructor's side gives it a readable ASCII id).
Use the same name for every lesson. The time is UTC, so that the instructor reads the same moment
wherever you are. The last line says the lesson's deadline and whether this submission is on time
(grader/student/deadline.py); grading counts the time your course records for the upload (the
LMS's). A file that is not a readable notebook is refused, with the way to recover it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from grader.errors import CannotSubmit
from grader.student import check, deadline
from grader.student.layout import LESSONS, ROOT, SUBMISSIONS, select_lessons, student_notebook
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT, submission_filename


def id_from_name(name: str) -> str:
    """`name` as an nbgrader student id: lower-case letters and digits joined by underscores.

    Latin letters lose their accents ("Zoë" gives `zoe`); letters of other scripts are kept as
    they are ("李雷" stays `李雷`), and the instructor's collect step turns them into a readable
    ASCII id of their own (grader.grading.intake.lms.make_submit).
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch))
    ident = re.sub(r"[\W_]+", "_", unicodedata.normalize("NFKC", stripped)).strip("_")
    if not ident:
        raise CannotSubmit(f"cannot make a student id from the name {name!r}: give your name in letters "
                           "or digits, e.g. `make submit LESSON=<id> NAME=ada_lovelace`")
    parsed = re.fullmatch(SUBMISSION_REGEXP, submission_filename("lesson", ident, "20000101-000000"))
    if parsed is None or parsed["student_id"] != ident:  # e.g. `alan_attempt_2` splits as student `alan`
        raise CannotSubmit(f"the student id {ident!r} would be misread from the file name: "
                           "leave out the word 'attempt', e.g. `make submit LESSON=<id> NAME=ada_lovelace`")
    return ident


def readable_notebook(source: Path) -> str:
    """Why `source` cannot be handed in (not a notebook nbformat can read), or "" when it can."""
    try:
        nbformat.read(source, as_version=4)
    except Exception as error:  # invalid JSON, not a notebook, unreadable: any of them
        checkpoint = source.parent / ".ipynb_checkpoints" / f"{source.stem}-checkpoint.ipynb"
        recover = (f"JupyterLab's last checkpoint of it is {checkpoint}: copy it over {source.name} (keep a copy "
                   "of the broken file first), open it in JupyterLab, check it, and run `make submit` again"
                   if checkpoint.is_file() else
                   "if it is still open in JupyterLab, save it there again (File > Save Notebook), then run "
                   "`make submit` again")
        return (f"{source} is not a notebook that can be graded ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else 'unreadable'}). Nothing was handed in. To recover: "
                f"{recover}.")
    return ""


def main(*, lesson: str, name: str, notebook: Path | None = None, out: Path = SUBMISSIONS,
         lessons_dir: Path = LESSONS, now: datetime | None = None, timeout: int | None = None) -> Path:
    """Self-check `lesson`, then copy its notebook to `out` under its submission name; return the path.

    The notebook is `<lessons_dir>/<id>/<id>.ipynb` unless `notebook` is given. `now` (default: the
    current time) is the submission time written into the name, in UTC.
    """
    [lesson] = select_lessons([lesson])
    student = id_from_name(name)
    source = Path(notebook) if notebook is not None else student_notebook(lesson, lessons_dir)
    if not source.is_file():
        raise CannotSubmit(f"no notebook at {source}: nothing to hand in")
    if problem := readable_notebook(source):
        raise CannotSubmit(problem)
    [verdict] = check.main(lessons=[lesson], notebook=source, timeout=timeout, due=False)
    if not verdict.ok:
        print(f"\nWARNING: {lesson} does not pass its self-check (see above). Submitting it anyway; "
              "fix it and run `make submit` again to hand in a newer version.")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(SUBMISSION_TIME_FORMAT)
    target = Path(out) / submission_filename(lesson, student, stamp)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    try:
        shown = target.resolve().relative_to(ROOT)
    except ValueError:
        shown = target
    print(f"\nwrote {shown}\nUpload this one file to your course's assignment page.")
    print(deadline.describe(lesson, deadline.due(lesson, student), now, handed_in=True).strip())
    return target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lesson", help="lesson id, e.g. 03-parallel-heads")
    parser.add_argument("--name", required=True, help="your name or the student id your instructor gave you")
    parser.add_argument("--notebook", type=Path, help="hand in this notebook instead of lessons/<id>/<id>.ipynb")
    parser.add_argument("--out", type=Path, default=SUBMISSIONS, help="folder to write to (default: submissions/)")


def run(args: argparse.Namespace) -> None:
    main(lesson=args.lesson, name=args.name, notebook=args.notebook, out=args.out)
