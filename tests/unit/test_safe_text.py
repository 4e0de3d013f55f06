"""grader.safe_text: what a submission controls is shown as data, in the terminal, the log and CSV."""

import csv
import io

import pytest

from grader.safe_text import for_csv, for_terminal


@pytest.mark.parametrize("attack", [
    "\x1b]0;owned\x07\x1b[2J",  # retitle the window, clear the screen
    "ok\n[3/3] honest_b: 0/15",  # a forged progress line
    "name\u202egnp.exe",  # right-to-left override
    "\ud800",  # a lone surrogate
    "a\rb\x00c\x7f\x9b",  # carriage return, NUL, DEL, a C1 control (CSI)
    "line\u2028sep\u2029para",
])
def test_for_terminal_leaves_no_control_character_and_no_line_break(attack):
    shown = for_terminal(attack)
    assert shown.isprintable(), repr(shown)
    shown.encode("utf-8")  # never raises


def test_for_terminal_keeps_ordinary_text_in_any_script():
    for text in ("honest_b: 15/15", "李雷", "Ada Lovelace", "Müller-Lüdenscheidt", "عليّ", "🙂"):
        assert for_terminal(text) == text


def test_for_terminal_shows_what_was_escaped():
    assert for_terminal("a\nb\x1b") == "a\\nb\\x1b"


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_for_csv_never_writes_a_formula(text):
    assert for_csv(text).startswith("'")


def test_for_csv_writes_any_unicode_as_utf8_and_keeps_numbers():
    row = [for_csv(value) for value in ("\ud800grade", "李雷", 15, -1.5, None, "plain")]
    buffer = io.StringIO()
    csv.writer(buffer).writerow(row)
    buffer.getvalue().encode("utf-8")  # a strict UTF-8 write: no UnicodeEncodeError
    assert row[1:] == ["李雷", 15, -1.5, None, "plain"]
    assert row[0] == "\\ud800grade"
