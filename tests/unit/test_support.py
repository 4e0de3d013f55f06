"""The test suite's own time limit (tests/support.py): it must stop a candidate, never be lost in a finaliser."""
import sys
import time

import pytest

from tests.support import OutOfTime, time_limit


class SlowToFinalise:
    def __del__(self):
        end = time.process_time() + 0.2
        while time.process_time() < end:  # the timer fires in here
            pass


@pytest.mark.parametrize("cpu", [False, True])
def test_a_limit_that_expires_in_a_finaliser_still_stops_the_call(monkeypatch, cpu):
    lost = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)
    with pytest.raises(OutOfTime), time_limit(0.05, cpu=cpu):
        SlowToFinalise()  # dropped at once: its __del__ runs past the limit
        end = time.monotonic() + 5
        while time.monotonic() < end:
            pass
    assert lost == []


def test_a_call_within_its_limit_is_not_stopped():
    with time_limit(1.0, cpu=True):
        total = sum(range(1000))
    assert total == 499500
