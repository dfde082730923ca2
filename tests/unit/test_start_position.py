"""START OFFSET / START TIMESTAMP to per-partition start offsets (no broker: lookups injected)."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.offsets import parse_offsets
from kafkasql_magic.kafka.reads import bounded
from kafkasql_magic.kafka.start_position import absolute_timestamp, start_offsets

LOWS = {0: 0, 1: 5, 2: 0}


def test_start_offset_per_partition_unlisted_from_the_beginning():
    assert start_offsets("t", [0, 1, 2], LOWS, start_offsets=(3, 7)) == {0: 3, 1: 7, 2: 0}
    # below what the partition still holds: its earliest record
    assert start_offsets("t", [2, 1, 0], LOWS, start_offsets=(0, 1, 4)) == {0: 0, 1: 5, 2: 4}


def test_more_start_offsets_than_partitions():
    with pytest.raises(StatementError) as info:
        start_offsets("events", [0, 1], LOWS, start_offsets=(1, 2, 3))
    assert str(info.value) == "START OFFSET specified more partitions (3) than topic (events) contains (2)"


def test_start_timestamp_absolute_and_relative():
    asked = []

    def offsets_for_time(partitions, ts):
        asked.append((tuple(partitions), ts))
        return {0: 10, 1: 2, 2: 40}

    assert start_offsets("t", [0, 1, 2], LOWS, start_timestamp=1_700_000_000_000, now_ms=1_800_000_000_000,
                         offsets_for_time=offsets_for_time) == {0: 10, 1: 5, 2: 40}
    assert start_offsets("t", [0, 1, 2], LOWS, start_timestamp=-60_000, now_ms=1_800_000_000_000,
                         offsets_for_time=offsets_for_time) == {0: 10, 1: 5, 2: 40}
    assert asked == [((0, 1, 2), 1_700_000_000_000), ((0, 1, 2), 1_799_999_940_000)]
    assert absolute_timestamp(-1000, 5000) == 4000 and absolute_timestamp(0, 5000) == 0


def test_no_option_leaves_the_start_to_the_session():
    assert start_offsets("t", [0], LOWS) is None
    with pytest.raises(ValueError, match="needs now_ms and offsets_for_time"):
        start_offsets("t", [0], LOWS, start_timestamp=-5)


def test_the_option_the_source_reads():
    text = bounded("127.0.0.1:9092", "t", start={1: 7, 0: 3}).options()["startingOffsets"]
    assert text == '{"0": 3, "1": 7}'
    assert parse_offsets(text, "startingOffsets", "earliest") == {0: 3, 1: 7}
