"""Each student's feedback page, named for upload to the LMS, in one folder and one .zip.

For every graded student, `grades/<lesson>-feedback/` gets their feedback page under a name the LMS
recognises as theirs: the start of the file name the LMS gave their submission, then
`<lesson>-feedback.html` (Canvas: `lovelaceada_1001_70001_03-parallel-heads-feedback.html`, for
"Re-Upload Submissions"; Moodle: `Ada Lovelace_88001_assignsubmission_file_...`, for "Upload
multiple feedback files in a zip"); a hub or make-submit submission gets `<id>_<lesson>-feedback.html`.
The same files are zipped as `grades/<lesson>-feedback.zip`. Both are rebuilt on every run.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from grader.grading.policy.grades import Row

ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # every entry's time, so that the same pages give the same .zip


def write(folder: Path, lesson: str, rows: Sequence[Row], page: Callable[[str], Path]) -> Path | None:
    """Write the bundle of `rows`' feedback pages (`page(student)`) to `folder` and `folder`.zip; the .zip,
    or None when no student has a page."""
    if folder.is_dir():
        shutil.rmtree(folder)
    archive = folder.with_suffix(".zip")
    archive.unlink(missing_ok=True)
    files = {}
    for row in rows:
        source = page(row.student)
        if row.status != "graded" or not source.is_file():
            continue
        prefix = row.submission.upload_prefix if row.submission and row.submission.upload_prefix else f"{row.student}_"
        name = "".join(ch if ch.isprintable() and ch not in "/\\" else "_" for ch in prefix) + f"{lesson}-feedback.html"
        files[name] = source
    if not files:
        return None
    folder.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, source in sorted(files.items()):
            shutil.copyfile(source, folder / name)
            entry = zipfile.ZipInfo(name, ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(entry, source.read_bytes())
    return archive
