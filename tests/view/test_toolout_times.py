"""A toolout unit's request times: since the transcript's first request, and the gap before."""

from __future__ import annotations

from pipeline.study_pages.toolout_times import Timing, shown_seconds, timings


def test_times_are_relative_to_the_first_request_with_the_gap_before_each() -> None:
    epoch = 1_746_000_000.0
    assert timings([epoch, epoch + 30, epoch + 331.5]) == [
        Timing(0.0, None),
        Timing(30.0, 30.0),
        Timing(331.5, 301.5),
    ]


def test_a_request_without_a_time_has_none_and_the_next_gap_skips_it() -> None:
    assert timings([None, 10.0, None, 70.0]) == [
        Timing(None, None),
        Timing(0.0, None),
        Timing(None, None),
        Timing(60.0, 60.0),
    ]


def test_seconds_are_shown_short_with_their_sign() -> None:
    assert shown_seconds(312.44, sign="+") == "+312 s"
    assert shown_seconds(30.0, sign="+") == "+30.0 s"
    assert shown_seconds(3601.0) == "3,601 s"
    assert shown_seconds(None, sign="+") == "no time recorded"
