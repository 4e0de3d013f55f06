"""The rules for student ids, names and submission times, in one place.

A student id is what grading files a person's work under (the submitted folder, the gradebook, the
CSVs): at most MAX_ID ASCII letters, digits, underscores, dots and hyphens (a JupyterHub user name
such as `ada.lovelace-2`), starting with a letter, digit or underscore, lower case, after Unicode NFKC and
case folding, so that `Ada` and `ada` are one student and no look-alike in another script becomes
someone else's id. Ids made from names (`readable_id`, `script_id`) stay the same from one run to
the next; the people registry (grader.grading.intake.people) keeps them once given.

A submission time is never in the future by more than CLOCK_SKEW.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime, timedelta

from anyascii import anyascii

# Part of the file-name convention and of how ids are made (ids must stay the same from one run to
# the next): constants, not settings.
MAX_ID = 64  # characters of a student id
MAX_READABLE = 48  # characters of the readable part of an id made from a name
CLOCK_SKEW = timedelta(minutes=10)  # how far in the future a submission time may be
SAFE_ID = re.compile(r"[a-z0-9_][a-z0-9_.-]*")  # no leading dot or hyphen: never "..", a hidden file or an option
ID_RULE = f"at most {MAX_ID} ASCII letters, digits, underscores, dots or hyphens, not starting with a dot or hyphen"


def normalised_id(raw: str) -> str | None:
    """The normalised id of `raw` (NFKC, case-folded), or None when it is not a safe id."""
    ident = unicodedata.normalize("NFKC", raw).casefold()
    return ident if SAFE_ID.fullmatch(ident) and len(ident) <= MAX_ID else None


def parse_time(text: str) -> datetime:
    """A time as configured or written by nbgrader ("2026-12-01 23:59:00 UTC", "...+02:00", ISO 8601), in
    UTC; without a zone, UTC. ValueError when it is not a time."""
    text = re.sub(r"\s*(?:UTC|Z)$", "", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"\s+([+-]\d\d:?\d\d)$", r"\1", text)
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def in_future(when: datetime, now: datetime | None = None) -> bool:
    """Whether `when` is later than now (UTC) by more than CLOCK_SKEW."""
    return when > (now or datetime.now(UTC)) + CLOCK_SKEW


def name_key(name: str) -> str:
    """`name` reduced for comparison: NFKD, accents dropped, case-folded, letters and digits only."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed.casefold() if ch.isalnum() and not unicodedata.combining(ch))


def readable_id(name: str) -> str:
    """`name` as a readable ASCII id: accents dropped, other scripts transliterated (anyascii; a
    caseless script such as Chinese one word per character: "李雷" gives "li_lei"), lower case, every
    run of other characters one underscore; "" when nothing readable is left."""
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    spaced = "".join(ch if ch.isascii() else (f" {anyascii(ch)} " if ch.lower() == ch.upper() else anyascii(ch))
                     for ch in stripped)
    return re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")


def script_id(name: str) -> str:
    """A readable ASCII id for a name typed in another script, unique to its exact letters:
    `readable_id(name)` plus six hex digits of the name's SHA-256 ("李雷" gives `li_lei_` and the
    digits), so that a look-alike ("аda" with a Cyrillic а) never becomes the id of "ada"."""
    digest = hashlib.sha256(unicodedata.normalize("NFKC", name).casefold().encode()).hexdigest()[:6]
    return f"{readable_id(name)[:MAX_READABLE]}_{digest}".lstrip("_")
