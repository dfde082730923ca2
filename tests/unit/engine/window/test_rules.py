"""Kafka Streams' window rules one record at a time (engine/window/rules.py). No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.engine.window.rules import closes_at, expired_message, is_closed, window_starts


@pytest.mark.parametrize("time,size,advance,starts", [
    (0, 10, 10, [0]), (9, 10, 10, [0]), (10, 10, 10, [10]),        # tumbling: [start, start + size)
    (12, 10, 5, [5, 10]), (15, 10, 5, [10, 15]), (19, 10, 5, [10, 15]),  # hopping: oldest first
    (3, 10, 5, [0]),                                                # none before the epoch
    (-3, 10, 5, [-10, -5]),                                         # a time before it keeps its own
    (7, 30, 10, [0]), (25, 30, 10, [0, 10, 20]),
])
def test_window_starts(time, size, advance, starts):
    assert window_starts(time, size, advance) == starts


def test_a_window_closes_when_stream_time_reaches_its_end_plus_grace():
    assert closes_at(10_000, 5_000) == 15_000
    assert not is_closed(10_000, 5_000, 14_999)
    assert is_closed(10_000, 5_000, 15_000) and is_closed(10_000, 5_000, 20_000)
    assert is_closed(10_000, 0, 10_000)  # no grace: closed at its end


def test_expired_message_is_kafka_streams_log_line():
    assert expired_message("clicks", 0, 6, 5_000, 0, 10_000, 5_000, 21_000) == (
        "Skipping record for expired window. topic=[clicks] partition=[0] offset=[6] timestamp=[5000] "
        "window=[0,10000) expiration=[16000] streamTime=[21000]")
