"""grader.grading.intake.ids: the rules for ids, names and times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from grader.grading.intake import ids


def test_ids_are_normalised_so_that_case_and_compatibility_forms_are_one_student():
    assert ids.normalised_id("Ada_LOVELACE") == ids.normalised_id("ａｄａ_lovelace") == "ada_lovelace"  # NFKC
    assert ids.normalised_id("аda") is None and ids.normalised_id("ada l") is None and ids.normalised_id("") is None
    assert ids.normalised_id("a" * 65) is None
    assert ids.normalised_id("Ada.Lovelace-2") == "ada.lovelace-2"  # a JupyterHub user name
    assert ids.normalised_id("..") is None and ids.normalised_id(".hidden") is None and ids.normalised_id("-rf") is None


def test_readable_ids_from_names_in_any_script():
    assert ids.readable_id("李雷") == "li_lei"
    assert ids.readable_id("Zoë O'Brien") == "zoe_o_brien"
    assert ids.readable_id("Пётр") == "petr"
    assert ids.readable_id("!!!") == ""
    assert ids.script_id("аda") != ids.script_id("ada")


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-12-01 23:59:00 UTC", datetime(2026, 12, 1, 23, 59, tzinfo=UTC)),
    ("2026-12-01 23:59:00", datetime(2026, 12, 1, 23, 59, tzinfo=UTC)),
    ("2026-12-01 23:59:00 +02:00", datetime(2026, 12, 1, 21, 59, tzinfo=UTC)),  # nbgrader reads 23:59 UTC
    ("2026-12-01T23:59:00-0500", datetime(2026, 12, 2, 4, 59, tzinfo=UTC)),
    ("2026-12-01 10:00:00.123456 UTC", datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)),
])
def test_times_are_read_in_utc_with_their_zone(text, expected):
    assert ids.parse_time(text) == expected


def test_a_time_not_far_in_the_future_is_accepted():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert not ids.in_future(now + ids.CLOCK_SKEW, now) and ids.in_future(now + 2 * ids.CLOCK_SKEW, now)
