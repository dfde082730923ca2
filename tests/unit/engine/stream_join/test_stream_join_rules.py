"""A stream-stream join's time rules (engine/stream_join/rules.py), as Kafka Streams computes
ksqlDB's joins. No Spark."""

from kafkasql_magic.engine.window.timing import DEFAULT_GRACE_MS
from kafkasql_magic.engine.stream_join.rules import (LEFT, RIGHT, closes_at, expires_at, is_late, joins,
                                                     retention_ms, unmatched_due)

MINUTE = 60_000


def test_records_are_kept_for_the_windows_size_plus_the_grace():
    assert retention_ms((1000, 2000), 500) == 3500
    assert retention_ms((0, 0), 0) == 0


def test_without_a_grace_period_records_are_kept_ksqldbs_24_hours_more():
    assert DEFAULT_GRACE_MS == 24 * 3600 * 1000
    assert retention_ms((1000, 1000), None) == 2000 + DEFAULT_GRACE_MS


def test_a_record_is_late_by_its_own_sides_stream_time():
    # joins.json "stream stream inner join with out of order and custom grace period": WITHIN 1
    # MINUTE GRACE PERIOD 1 MINUTE keeps records 3 minutes behind their side's stream time
    window = (MINUTE, MINUTE)
    assert is_late(90_000, 330_000, window, MINUTE)  # the left side is at 330 s
    assert not is_late(90_000, 90_000, window, MINUTE)  # the right side's stream time is its own
    assert not is_late(150_000, 330_000, window, MINUTE)
    assert is_late(149_999, 330_000, window, MINUTE)


def test_within_looks_back_and_ahead_from_the_left_record():
    window = (1000, 2000)  # WITHIN (1 SECOND, 2 SECONDS): right in [left - 1 s, left + 2 s]
    assert joins(LEFT, 10_000, 9_000, window) and joins(LEFT, 10_000, 12_000, window)
    assert not joins(LEFT, 10_000, 8_999, window) and not joins(LEFT, 10_000, 12_001, window)
    assert joins(RIGHT, 12_000, 10_000, window) and not joins(RIGHT, 12_001, 10_000, window)
    assert joins(RIGHT, 9_000, 10_000, window) and not joins(RIGHT, 8_999, 10_000, window)


def test_with_a_grace_period_an_unmatched_record_waits_for_its_window_and_grace():
    window = (1000, 2000)
    assert closes_at(LEFT, 10_000, window, 500) == 12_500  # the left record's window ends 2 s after it
    assert closes_at(RIGHT, 10_000, window, 500) == 11_500  # the right record's, 1 s after it
    assert not unmatched_due(LEFT, 10_000, window, 500, 12_500)
    assert unmatched_due(LEFT, 10_000, window, 500, 12_501)


def test_without_a_grace_period_an_unmatched_record_comes_out_at_once():
    # joins.json "stream stream left join": the left record at 0 comes out NULL-padded at 0
    assert unmatched_due(LEFT, 0, (11_000, 11_000), None, 0)


def test_a_record_leaves_the_state_when_no_record_can_meet_it():
    assert expires_at(10_000, (1000, 2000), 500) == 10_000 + 3500 + 3000
