"""Which windows a record falls in, when a window closes, and what a late record's log line says:
Kafka Streams' rules for TUMBLING and HOPPING windows, one record at a time, for the keyed
state step (`keyed_spark.py`). Pure: no Spark here.

Stream time is the largest record time the task has seen. A window [start, start + size)
accepts records while stream time < its end plus the grace period; once stream time reaches
that bound the window is closed: a record still falling in it is late (dropped from it and
logged), EMIT FINAL emits its one row, and its state goes.
"""

from __future__ import annotations


def window_starts(time: int, size: int, advance: int) -> list[int]:
    """The starts of the epoch-aligned windows holding `time` (ms), oldest first: every multiple
    of `advance` in (time - size, time], none before the epoch for a time after it (Kafka
    Streams' `TimeWindows.windowsFor` starts at 0)."""
    last = time - time % advance
    first = (time - size) - (time - size) % advance + advance
    if time >= 0:
        first = max(first, 0)
    return list(range(first, last + 1, advance))


def closes_at(end: int, grace: int) -> int:
    """The stream time at which a window ending at `end` closes."""
    return end + grace


def is_closed(end: int, grace: int, stream_time: int) -> bool:
    return stream_time >= closes_at(end, grace)


def expired_message(topic: str | None, partition: int | None, offset: int | None, time: int, start: int, end: int,
                    grace: int, stream_time: int) -> str:
    """Kafka Streams' log line for a record dropped from a closed window."""
    return (f"Skipping record for expired window. topic=[{topic}] partition=[{partition}] offset=[{offset}] "
            f"timestamp=[{time}] window=[{start},{end}) expiration=[{stream_time - grace}] "
            f"streamTime=[{stream_time}]")
