"""The LMSs the course knows, in one list, and the one decision about a download every LMS takes part in.

`LMSS` is every LMS, found as the `Lms` class of each module of this package but base.py and this one,
in their `order`: adding an LMS is adding its module (docs/development.md, "Adding an LMS"). The rest of
the grader asks this module:

- `decide`: which format a download is in, from every file of it: the one format whose LMS claims
  every file (`Lms.read_download`). A download that mixes formats is refused with the files that do
  not fit; one whose files fit two formats needs `--format`, except that a `fallback` format (the
  course's own `make submit` names, which say who by the name alone) gives way to any LMS that fits:
  what an LMS says of a file outranks what its name says.
- `roster_formats`: every export of a course's students some LMS gives, with its LMS;
- `importers`: the LMSs that have a grade import file, in order; `get`: one LMS by its name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from traitlets.config import Config, Configurable

from grader.errors import BadDownload
from grader.grading.intake.lms.base import Lms, Match, Opener, RosterFormat
from grader.safe_text import for_terminal

SHOWN = 20  # files listed in a refusal
NOT_AN_LMS = ("base", "registry")


def _found() -> tuple[type[Lms], ...]:
    """The Lms class of every module of this package but NOT_AN_LMS, in their `order`."""
    kinds = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in NOT_AN_LMS:
            loaded = importlib.import_module(f"{__package__}.{module.name}")
            kinds += [kind for kind in vars(loaded).values() if inspect.isclass(kind) and issubclass(kind, Lms)
                      and kind.__module__ == loaded.__name__ and not inspect.isabstract(kind)]
    return tuple(sorted(kinds, key=lambda kind: (kind.order, kind.name)))


LMSS = _found()


def settings() -> list[type[Configurable]]:
    """Every LMS's option classes, in the LMSs' order (docs/configuration.md lists them)."""
    return [cls for kind in LMSS for cls in kind.settings]


def lmss(config: Config | None = None) -> tuple[Lms, ...]:
    """Every LMS, with the course's configuration (its own settings, e.g. c.CanvasImport)."""
    return tuple(kind(config) for kind in LMSS)


def get(name: str, config: Config | None = None) -> Lms | None:
    return next((lms for lms in lmss(config) if lms.name == name), None)


def importers(config: Config | None = None) -> tuple[Lms, ...]:
    return tuple(lms for lms in lmss(config) if lms.writes_import)


def roster_formats() -> list[tuple[RosterFormat, Lms]]:
    return [(form, lms) for lms in lmss() for form in lms.rosters]


def _unreadable() -> bytes:
    raise OSError("no content given")


def decide(files: Mapping[str, Opener] | Iterable[str], lesson: str = "", *, forced: str | None = None,
           config: Config | None = None) -> tuple[str, dict[str, Match]]:
    """The one format every file of a download fits (`files`: path in the download -> its bytes, or the
    paths alone), and each file's Match; BadDownload otherwise. `forced` names the format to use
    (`--format`); every file must still fit it. `lesson`: the lesson graded."""
    if not isinstance(files, Mapping):
        files = dict.fromkeys(files, _unreadable)
    known = lmss(config)
    if forced is not None and forced not in {lms.name for lms in known}:
        raise BadDownload(f"unknown download format {for_terminal(forced)!r}: one of "
                          f"{', '.join(lms.name for lms in known)}")
    fits = {lms.name: (lms, lms.read_download(files, lesson)) for lms in known if forced in (None, lms.name)}
    complete = [name for name, (_, found) in fits.items() if len(found) == len(files)]
    if len(complete) > 1:  # what an LMS says of a file outranks what its name alone says
        complete = [name for name in complete if not fits[name][0].fallback] or complete
    if len(complete) == 1:
        return complete[0], fits[complete[0]][1]
    if complete:
        raise BadDownload(f"every file of the download fits more than one format ({', '.join(complete)}): "
                          "say which with --format (make autograde FORMAT=<name>)")
    best = max(fits, key=lambda name: len(fits[name][1]))
    misfits = [p for p in files if p not in fits[best][1]]
    listed = "\n".join(f"  {for_terminal(p)}" for p in misfits[:SHOWN])
    more = f"\n  ... and {len(misfits) - SHOWN} more" if len(misfits) > SHOWN else ""
    raise BadDownload(f"the download is not one format: {len(fits[best][1])} of {len(files)} files are named as "
                      f"{best} names them, and these {len(misfits)} are not:\n{listed}{more}\nNothing was "
                      "collected. Take these files out of the download (or collect them by hand), or give the "
                      "LMS's download as it came, and run again.")
