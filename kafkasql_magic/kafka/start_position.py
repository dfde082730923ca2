"""Where a Materialize source starts reading: START OFFSET and START TIMESTAMP as per-partition
offsets (a source's first offsets; kafka.reads turns them into the `startingOffsets` option).

START OFFSET (o0, o1, ...) gives partition i offset oi; a partition it does not list starts at
its beginning. START TIMESTAMP t starts each partition at its first record with a timestamp
>= t (the broker's offsets-for-times answer, the partition's end when none is that recent); a
negative t is that many milliseconds before now. An offset below what the partition still holds
starts at its earliest record. The broker is asked through the `offsets_for_time` callable
(kafka.time_index.first_offsets_at_or_after, which checks the broker's answer against the
records), so this stays pure and testable without a broker.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..errors import StatementError

OffsetsForTime = Callable[[Sequence[int], int], Mapping[int, int]]

#: The SourceDef property holding a source's first offsets ({partition: offset}), resolved once
#: when the source is created (a START TIMESTAMP too, as Materialize does).
START_PROPERTY = "START OFFSETS"


def absolute_timestamp(start_timestamp: int, now_ms: int) -> int:
    """START TIMESTAMP in milliseconds since the epoch (negative: relative to `now_ms`)."""
    return now_ms + start_timestamp if start_timestamp < 0 else start_timestamp


def start_offsets(
    topic: str,
    partitions: Sequence[int],
    lows: Mapping[int, int],
    *,
    start_offsets: Sequence[int] | None = None,
    start_timestamp: int | None = None,
    now_ms: int | None = None,
    offsets_for_time: OffsetsForTime | None = None,
) -> dict[int, int] | None:
    """{partition: first offset to read}, or None when neither option is given (the session's
    auto.offset.reset decides)."""
    parts = sorted(partitions)
    if start_offsets is not None:
        if len(start_offsets) > len(parts):
            raise StatementError(f"START OFFSET specified more partitions ({len(start_offsets)}) than topic "
                                 f"({topic}) contains ({len(parts)})")
        wanted = dict(enumerate(start_offsets))
        return {p: max(wanted.get(p, 0), lows.get(p, 0)) for p in parts}
    if start_timestamp is not None:
        if now_ms is None or offsets_for_time is None:
            raise ValueError("START TIMESTAMP needs now_ms and offsets_for_time")
        found = offsets_for_time(parts, absolute_timestamp(start_timestamp, now_ms))
        return {p: max(found[p], lows.get(p, 0)) for p in parts}
    return None
