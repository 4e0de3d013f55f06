"""Which LMS a download comes from, decided once for the whole download, and what each file's
path says about it.

Every format is one named-group regular expression (the syntax of nbgrader's
`FileNameCollectorPlugin`), matched against a file's whole path inside the download
("folder/file.ipynb"), all kept in `FORMATS` and configurable as `c.DownloadFormats.formats`. The
groups a format gives:

- `lms_id`, `name`: the LMS's number for the student (Canvas's user id, Moodle's participant id)
  and the name the LMS wrote; these, and only these, say who the file is;
- `late`: non-empty when the LMS marked the submission late (Canvas's `LATE_`);
- `student_id`, `timestamp`: a `make submit` file's id and time (YYYYMMDD-HHMMSS, UTC);
- `file_id`: the rest of the path: the student's own file name, which never says who or when.

The formats, as each LMS writes them:

- Canvas, "Download Submissions": one .zip, every file at its top level named
  `<name>_[LATE_]<user id>_<submission id>_<the student's file name>`, the name being the sortable
  name squashed to lower case ("lovelaceada").
- Moodle, "Download all submissions": `<Full Name>_<participant id>_assignsubmission_<plugin>_<the
  student's file name>`, or with "Download submissions in folders" one folder
  `<Full Name>_<participant id>_assignsubmission_<plugin>_` per student, holding the student's files
  and folders as uploaded: everything inside that folder is that student's.
- A folder of `make submit` files that the instructor gathered:
  `<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb`: the only format whose name
  carries the id and time, so it is used only when the whole download is such files and no LMS
  format fits them all (a Moodle folder of uploaded `make submit` files is Moodle's).

`decide` picks the one format every file of the download fits; a download that mixes formats is
refused with the files that do not fit, and one that fits two formats equally needs `--format`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from traitlets import Dict
from traitlets.config import Configurable

from grader.errors import BadDownload
from grader.grading.intake.ids import normalised_id, script_id
from grader.safe_text import for_terminal
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT

FORMATS = {
    "canvas": r"(?P<name>[^_/]+)_(?:(?P<late>LATE)_)?(?P<lms_id>\d+)_(?P<submission_id>\d+)_(?P<file_id>[^/]+)",
    "moodle": r"(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_[a-z]+_(?:/(?P<inner>.+/)?)?(?P<file_id>[^/]+)",
    "make-submit": r"(?:.*/)?" + SUBMISSION_REGEXP,
}
SUBMIT = "make-submit"  # the one format whose file names carry the student's id and time
SHOWN = 20  # files listed in a refusal


class DownloadFormats(Configurable):
    """The file-name patterns of LMS downloads, configurable as `c.DownloadFormats.formats`."""

    formats = Dict(default_value=FORMATS,
                   help="format name -> named-group regular expression (nbgrader FileNameCollectorPlugin "
                        "syntax) matched against a file's whole path in the download; the groups lms_id and "
                        "name, or student_id and timestamp, say whose it is").tag(config=True)


@dataclass(frozen=True)
class Match:
    """What a file's path in a download says about it."""

    format: str
    file_id: str
    student_id: str = ""
    name: str = ""
    lms_id: str = ""
    late: bool = False
    timestamp: datetime | None = None
    submission_id: str = ""

    @property
    def key(self) -> str:
        """Who the file is, as the LMS says it: `lms:<number>`, or `submit:<id>` for a make-submit file."""
        if self.lms_id:
            return f"lms:{self.lms_id}"
        return f"submit:{normalised_id(self.student_id) or script_id(self.student_id)}"

    @property
    def upload_prefix(self) -> str:
        """The start of the file's name that the LMS wrote, for naming files to upload back."""
        if self.format == "canvas":
            return f"{self.name}_{'LATE_' * self.late}{self.lms_id}_{self.submission_id}_"
        if self.lms_id:
            return f"{self.name}_{self.lms_id}_assignsubmission_file_"
        return f"{self.student_id}_"


def match(path: str, regexp: str, name: str = "") -> Match | None:
    """What `regexp` (a format's pattern, named `name`) reads in `path`, or None when it does not fit."""
    found = re.fullmatch(regexp, path, flags=re.DOTALL)
    if found is None:
        return None
    groups = {k: v or "" for k, v in found.groupdict().items()}
    when = None
    if groups.get("timestamp"):
        try:
            when = datetime.strptime(groups["timestamp"], SUBMISSION_TIME_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            return None
    if not (groups.get("lms_id") or groups.get("student_id")):
        return None
    return Match(name, groups.get("file_id", ""), groups.get("student_id", ""), groups.get("name", ""),
                 groups.get("lms_id", ""), bool(groups.get("late")), when, groups.get("submission_id", ""))


def decide(paths: list[str], formats: dict[str, str] | None = None, *, forced: str | None = None
           ) -> tuple[str, dict[str, Match]]:
    """The one format every path of a download fits, and each path's Match; BadDownload otherwise.

    `forced` names the format to use (`--format`); every path must still fit it."""
    formats = formats or FORMATS
    if forced is not None and forced not in formats:
        raise BadDownload(f"unknown download format {for_terminal(forced)!r}: one of {', '.join(formats)}")
    fits = {name: {p: m for p in paths if (m := match(p, regexp, name))} for name, regexp in formats.items()
            if forced in (None, name)}
    complete = [name for name, found in fits.items() if len(found) == len(paths)]
    if len(complete) > 1 and SUBMIT in complete:  # what the LMS says of a file outranks what its name says
        complete.remove(SUBMIT)
    if len(complete) == 1:
        return complete[0], fits[complete[0]]
    if complete:
        raise BadDownload(f"every file of the download fits more than one format ({', '.join(complete)}): "
                          "say which with --format (make autograde FORMAT=<name>)")
    best = max(fits, key=lambda name: len(fits[name]))
    misfits = [p for p in paths if p not in fits[best]]
    listed = "\n".join(f"  {for_terminal(p)}" for p in misfits[:SHOWN])
    more = f"\n  ... and {len(misfits) - SHOWN} more" if len(misfits) > SHOWN else ""
    raise BadDownload(f"the download is not one format: {len(fits[best])} of {len(paths)} files are named as "
                      f"{best} names them, and these {len(misfits)} are not:\n{listed}{more}\nNothing was "
                      "collected. Take these files out of the download (or collect them by hand), or give the "
                      "LMS's download as it came, and run again.")
