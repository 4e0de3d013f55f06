"""Text a submission controls, made safe to show: one function for the terminal and log, one for CSV cells.

Everything a student can choose (grade ids, cell sources, file and zip entry names, failure
reasons, kernel output) passes through `for_terminal` before it is printed or logged, and through
`for_csv` before it is written into a CSV cell. Neither ever raises, whatever the string holds.
"""

from __future__ import annotations

import unicodedata

# Bidirectional controls (embeddings, overrides, isolates, marks): they reorder what a reader sees.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Control characters, lone surrogates, private-use characters, line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Zl", "Zp"})
# Characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection list).
_FORMULA_START = frozenset("=+-@\t\r")


def _visible(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")  # '\x1b' -> '\\x1b', '\u202e' -> '\\u202e'


def for_terminal(text: object) -> str:
    """`text` as one inert line: control and bidi characters, newlines and lone surrogates shown as escapes.

    The result holds no byte a terminal acts on and no line break, so a student's string can neither
    move the cursor, retitle the window, nor start a line of its own in a log.
    """
    return "".join(_visible(ch) if ch in _BIDI or unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch
                   for ch in str(text))


def for_csv(value: object) -> object:
    """`value` ready for `csv.writer`: numbers as they are; text writable as UTF-8 and never a formula.

    Lone surrogates become `\\udXXX` escapes (a strict UTF-8 write would raise on them); text that a
    spreadsheet would evaluate (starting with = + - @, a tab or a carriage return) gets a leading `'`.
    """
    if value is None or isinstance(value, int | float):
        return value
    text = str(value).encode("utf-8", "backslashreplace").decode("utf-8")
    return "'" + text if text[:1] in _FORMULA_START else text
