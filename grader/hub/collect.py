"""Instructors on a hub: collect a lesson's submissions from nbgrader's exchange, trusting none blindly.

`python -m grader hub-collect 03-parallel-heads` (`make hub-collect LESSON=03-parallel-heads`), then
`make autograde LESSON=03-parallel-heads` (no SOURCE) and `nbgrader release_feedback 03-parallel-heads`.

The exchange's inbound folder is writable by every user, and everything in a submission is written
by the student's own processes: its folder name (`<user>+<lesson>+<time>+<random>`), its
timestamp.txt, its files. nbgrader's own `collect` only warns when a folder's owner is not the user
it names, and copies what it finds, links included. So this command first stages, into a folder of
the course's own, only what it can vouch for, and then runs nbgrader's `collect` on that:

- a submission whose folder or notebook is not owned by the user it names is refused (another
  student's name, a forged submission);
- a user name that is not a course student id (lowercase ASCII letters, digits, underscores) is
  refused with that reason;
- of each submission only `<lesson>.ipynb`, `timestamp.txt` and `submission_secret.txt` (which
  `release_feedback` needs) are taken, each a regular file opened without following links and at
  most MAX_ENTRY bytes; links, folders and other files are left behind;
- the time of a submission is the time the exchange's file system received its notebook (its
  inode change time, which its owner cannot set back), not the time it claims; where the two differ
  by more than CLOCK_SKEW, the summary says so.

nbgrader's `collect --update` then places the latest of each student's staged submissions in the
submitted folder (`<submitted>/<student>/<lesson>/<lesson>.ipynb` and its timestamp.txt), where the
course's late policy reads its time.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from nbgrader.utils import parse_utc

from grader.course import ROOT, nbgrader_config, select_lessons
from grader.errors import HubRefused
from grader.grading.intake.collect import MAX_ENTRY
from grader.grading.intake.ids import CLOCK_SKEW, normalised_id
from grader.hub import settings
from grader.layout import SUBMISSION_SECRET, TIMESTAMP, Layout
from grader.safe_text import for_terminal

TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's Exchange.timestamp_format, in UTC
SMALL = 4096  # bytes of timestamp.txt or submission_secret.txt


@dataclass
class HubCollected:
    staged: list[str] = field(default_factory=list)  # submissions (folder names) vouched for
    refused: list[tuple[str, str]] = field(default_factory=list)  # (folder name, why)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (folder name, what to look at)


def _read(folder_fd: int, name: str, uid: int, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file `name` in `folder_fd`, owned by `uid`, opened without following links."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{name} is not a regular file")
        if info.st_uid != uid:
            raise ValueError(f"{name} is not owned by the student who submitted it")
        if info.st_size > limit:
            raise ValueError(f"{name} is larger than {limit} bytes")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"{name} is larger than {limit} bytes")
        return data, info
    finally:
        os.close(fd)


def system_uid(user: str) -> int:
    """The uid of the system user `user` (KeyError when there is none)."""
    return pwd.getpwnam(user).pw_uid


def stage(inbound: Path, staging: Path, lesson: str, *, now: datetime | None = None,
          uid_of: Callable[[str], int] = system_uid) -> HubCollected:
    """Copy what can be vouched for of each of `lesson`'s submissions in `inbound` to `staging` (see the
    module); `uid_of(user)` is the uid that must own a submission in the name of `user`."""
    result = HubCollected()
    now = now or datetime.now(UTC)
    try:
        entries = sorted(os.listdir(inbound))
    except OSError as error:
        raise HubRefused(f"cannot read the exchange's inbound folder {inbound} ({error.strerror}): run this as "
                         "the instructor who released the lesson") from None
    for name in entries:
        parts = name.split("+")
        if len(parts) < 3 or parts[1] != lesson:
            continue
        user, claimed = parts[0], parts[2]
        if normalised_id(user) != user:
            result.refused.append((name, f"the hub user name {user!r} is not a course student id (lowercase ASCII "
                                         "letters, digits and underscores)"))
            continue
        try:
            uid = uid_of(user)
        except KeyError:
            result.refused.append((name, f"no system user {user!r}"))
            continue
        try:
            folder_fd = os.open(inbound / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as error:
            result.refused.append((name, f"not a folder that can be read: {error.strerror}"))
            continue
        try:
            if os.fstat(folder_fd).st_uid != uid:
                raise ValueError(f"the folder is not owned by {user}: a submission in another student's name")
            notebook, info = _read(folder_fd, f"{lesson}.ipynb", uid, MAX_ENTRY)
            secret, _ = _read(folder_fd, SUBMISSION_SECRET, uid, SMALL)
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            result.refused.append((name, reason))
            continue
        finally:
            os.close(folder_fd)
        received = datetime.fromtimestamp(info.st_ctime, UTC)
        try:
            stated = parse_utc(claimed).replace(tzinfo=UTC)  # nbgrader gives naive UTC
        except (ValueError, OverflowError):
            stated = None
        if stated is None or abs(stated - received) > CLOCK_SKEW:
            result.notes.append((name, f"claims {claimed!r}; the exchange received it at "
                                       f"{received:%Y-%m-%d %H:%M:%S} UTC, which counts"))
        if received > now + CLOCK_SKEW:
            result.refused.append((name, "received in the future: check the clock"))
            continue
        when = received.strftime(TIME_FORMAT)
        target = staging / "+".join([user, lesson, when, parts[3] if len(parts) > 3 else "x"])
        target.mkdir(parents=True)
        (target / f"{lesson}.ipynb").write_bytes(notebook)
        (target / SUBMISSION_SECRET).write_bytes(secret)
        (target / TIMESTAMP).write_text(when)
        result.staged.append(name)
    return result


def main(*, lesson: str, course: Path = ROOT, exchange: Path | None = None, course_id: str | None = None,
         out: TextIO = sys.stdout) -> HubCollected:
    """Stage `lesson`'s submissions that can be vouched for, then `nbgrader collect --update` them."""
    [lesson] = select_lessons([lesson])
    exchange = exchange or settings.exchange_root()
    course_id = course_id or settings.course_id()
    layout = Layout.of(nbgrader_config(course))
    staging_root = layout.hub_staging
    shutil.rmtree(staging_root, ignore_errors=True)
    staging = staging_root / course_id / "inbound"
    staging.mkdir(parents=True, mode=0o700)
    result = stage(exchange / course_id / "inbound", staging, lesson)
    if result.staged:
        settings.nbgrader(course, "collect", lesson, "--update", f"--course={course_id}",
                          f"--Exchange.root={staging_root}", "--ExchangeCollect.check_owner=False")
    shutil.rmtree(staging_root, ignore_errors=True)
    print(f"{lesson}: {len(result.staged)} submission(s) collected from the exchange into {layout.submitted}",
          file=out)
    for title, rows in (("refused", result.refused), ("to look at", result.notes)):
        for name, why in rows:
            print(f"  {title}: {for_terminal(name)}: {for_terminal(why)}", file=out)
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lesson", help="lesson id, e.g. 03-parallel-heads")
    parser.add_argument("--exchange", type=Path, help="nbgrader's exchange root (default: $ATTENTION_EXCHANGE)")
    parser.add_argument("--course-id", help="nbgrader's course id (default: $ATTENTION_COURSE_ID, else attention)")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course repository (default: this one)")


def run(args: argparse.Namespace) -> None:
    main(lesson=args.lesson, course=args.course, exchange=args.exchange, course_id=args.course_id)
