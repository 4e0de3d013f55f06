"""Text made safe to show: one rule for the terminal, the log, CSV cells and pages.

Everything a student can choose (grade ids, cell sources, file and zip entry names, failure
reasons, kernel output), and the instructor's own text too (an override's reason, roster cells),
passes through `for_terminal` before it is printed or logged, through `for_csv` before it is written
into a CSV cell, and through `for_page` before a page's template escapes it for HTML
(grader/grading/outputs/pages.py). All three escape control and bidi characters, line breaks and
lone surrogates the same way; none ever raises, whatever the string holds.
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


def for_page(value: object) -> object:
    """`value` ready for an autoescaping template: text as `for_terminal` shows it; markup the template itself
    marked safe (`__html__`, the page's own policy) and anything else as it is."""
    return for_terminal(value) if isinstance(value, str) and not hasattr(value, "__html__") else value


def for_csv(value: object) -> object:
    """`value` ready for `csv.writer`: numbers as they are; text as `for_terminal` shows it, never a formula.

    Control and bidi characters, line breaks and lone surrogates become escapes, as in the terminal
    (a raw ESC in a cell runs when someone `cat`s the file; a strict UTF-8 write would raise on a
    surrogate); text that a spreadsheet would evaluate (starting with = + - @, a tab or a carriage
    return) gets a leading `'`.
    """
    if value is None or isinstance(value, int | float):
        return value
    raw = str(value)
    text = for_terminal(raw)
    return "'" + text if raw[:1] in _FORMULA_START or text[:1] in _FORMULA_START else text
