"""Kafka Streams' SESSION window rules one record at a time (engine/window/session_rules.py). No Spark."""

from __future__ import annotations

from kafkasql_magic.engine.window.session_rules import (closes_at, expired_message, found, is_late, merged_bounds,
                                                        retained)


def bounds(session):
    return session


def test_a_record_finds_the_sessions_within_the_gap_on_either_side_in_end_order():
    sessions = [(22, 22), (0, 5), (40, 45)]
    assert found(sessions, bounds, 14, 10, 100, 45) == [(0, 5), (22, 22)]  # 14 - 5 = 9 and 22 - 14 = 8
    assert found(sessions, bounds, 15, 10, 100, 45) == [(0, 5), (22, 22)]  # a gap of exactly 10 still joins
    assert found(sessions, bounds, 16, 10, 100, 45) == [(22, 22)]
    assert found(sessions, bounds, 3, 10, 100, 45) == [(0, 5)]  # a record inside a session


def test_a_session_leaves_the_store_once_its_end_is_gap_plus_grace_behind_stream_time():
    # ksqlDB's "out of order - explicit grace period": gap 30 s, grace 60 s, stream time 100010
    assert not retained(0, 30_000, 60_000, 100_010)
    assert found([(0, 0)], bounds, 10_010, 30_000, 60_000, 100_010) == []  # so 10010 starts a session of its own
    assert retained(10_011, 30_000, 60_000, 100_010) and not retained(10_010, 30_000, 60_000, 100_010)


def test_merged_bounds_span_the_record_and_every_session_it_joins():
    assert merged_bounds(14, [(0, 5), (22, 22)]) == (0, 22)
    assert merged_bounds(3, [(0, 5)]) == (0, 5)
    assert merged_bounds(7, []) == (7, 7)


def test_a_record_is_late_when_its_session_ends_before_stream_time_minus_gap_and_grace():
    assert is_late(10_009, 30_000, 60_000, 100_010)  # ksqlDB's test: 10009 + 60000 + 30000 < 100010
    assert not is_late(10_010, 30_000, 60_000, 100_010)
    assert closes_at(14, 5, 6) == 26  # EMIT FINAL emits [0, 14] once stream time passes 25 (ksqlDB's test)
    assert is_late(14, 5, 6, 26) and not is_late(14, 5, 6, 25)


def test_expired_message_is_kafka_streams_log_line_for_a_session():
    assert expired_message("t", 0, 2, 10_009, 10_009, 10_009, 30_000, 60_000, 100_010) == (
        "Skipping record for expired window. topic=[t] partition=[0] offset=[2] timestamp=[10009] "
        "window=[10009,10009] expiration=[10010] streamTime=[100010]")
