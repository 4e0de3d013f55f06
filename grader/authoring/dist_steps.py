"""The distribution in steps: publish the lessons opened so far, then add later ones without touching earlier ones.

Later lessons hand out working versions of earlier graded functions (Lesson 3 gives Lesson 1's
`softmax` and `attention`), so a course publishes its lessons as they open: `make dist
DIR=... LESSONS=01-03`, then `make dist DIR=... LESSONS=01-04`. `LESSONS` is a comma-separated list
of lesson ids, their number prefixes ("03"), or ranges of numbers ("01-03").

Building into an earlier distribution keeps every lesson it already published exactly as it was:
its notebook, its pristine copy and its checksum come from that distribution, not from the current
release, so that a student who pulls the new version keeps their work on the earlier lessons
without a conflict. A lesson whose release changed since it was published is kept as published,
and reported; `--republish <id>` replaces it on purpose.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from grader.course import lesson_ids
from grader.errors import UnknownLesson


def parse(spec: str) -> list[str]:
    """The lesson ids `spec` names ("01-03", "03,05", "03-parallel-heads"), in course order."""
    known = lesson_ids()
    number = {lesson: int(lesson.split("-", 1)[0]) for lesson in known if lesson.split("-", 1)[0].isdigit()}
    chosen: set[str] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if part in known:
            chosen.add(part)
        elif match := re.fullmatch(r"(\d+)(?:-(\d+))?", part):
            low, high = int(match[1]), int(match[2] or match[1])
            found = {lesson for lesson, n in number.items() if low <= n <= high}
            if not found:
                raise UnknownLesson(f"no lesson numbered {part}; the course has: {', '.join(known)}")
            chosen |= found
        else:
            raise UnknownLesson(f"{part!r} is not a lesson id or a range like 01-03; "
                                f"the course has: {', '.join(known)}")
    return [lesson for lesson in known if lesson in chosen]


def published(out: Path, manifest: str, releases: str) -> dict[str, dict[str, bytes]]:
    """lesson -> {distribution path: bytes} of every lesson the distribution in `out` published
    ({} when there is none). A lesson whose pristine copy no longer matches the manifest is left out."""
    try:
        shipped = json.loads((out / manifest).read_text())["releases"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found = {}
    for lesson, digest in shipped.items():
        pristine = out / releases / f"{lesson}.ipynb"
        folder = out / "lessons" / lesson
        if not pristine.is_file() or hashlib.sha256(pristine.read_bytes()).hexdigest() != digest:
            continue
        files = {f"{releases}/{lesson}.ipynb": pristine.read_bytes()}
        files |= {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                  if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts}
        found[lesson] = files
    return found
