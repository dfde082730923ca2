"""A stream-stream join's time rules (engine/stream_join/rules.py). No Spark."""

from kafkasql_magic.engine.window.timing import DEFAULT_GRACE_MS
from kafkasql_magic.engine.stream_join.rules import hold_ms


def test_records_are_held_for_the_windows_size_plus_the_grace():
    assert hold_ms((1000, 2000), 500) == 3500
    assert hold_ms((0, 0), 0) == 0


def test_without_a_grace_period_records_are_held_ksqldbs_24_hours_more():
    assert DEFAULT_GRACE_MS == 24 * 3600 * 1000
    assert hold_ms((1000, 1000), None) == 2000 + DEFAULT_GRACE_MS
