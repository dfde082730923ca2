"""SESSION windows as Kafka Streams forms them, one record at a time, for the keyed state step
(`sessions_spark.py`). Pure: no Spark here.

A session of a key is a run of its records with no gap longer than the inactivity gap; its
bounds are its first and last record time. A record finds the key's sessions that end no more
than the gap before it and start no more than the gap after it; it makes one session with
them (the merged bounds), and the sessions it merged are removed. A session stays in the
store while its end is after stream time minus gap and grace (the store's retention); a record
whose merged session ends before that is late: dropped and logged. EMIT FINAL emits a session
once stream time passes that same bound.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

S = TypeVar("S")


def retained(end: int, gap: int, grace: int, stream_time: int) -> bool:
    """Whether a session ending at `end` is still in the store at `stream_time`."""
    return end > stream_time - gap - grace


def found(sessions: Iterable[S], bounds: Callable[[S], tuple[int, int]], time: int, gap: int, grace: int,
          stream_time: int) -> list[S]:
    """The sessions a record at `time` joins, as Kafka Streams' `findSessions` returns them: those
    ending at or after `time - gap` and starting at or before `time + gap`, still retained,
    ordered by end then start."""
    near = [s for s in sessions if bounds(s)[1] >= time - gap and bounds(s)[0] <= time + gap
            and retained(bounds(s)[1], gap, grace, stream_time)]
    return sorted(near, key=lambda s: (bounds(s)[1], bounds(s)[0]))


def merged_bounds(time: int, bounds: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """The bounds of the session a record at `time` makes with the sessions it joins."""
    start = end = time
    for first, last in bounds:
        start, end = min(start, first), max(end, last)
    return start, end


def close_time(gap: int, grace: int, stream_time: int) -> int:
    """Kafka Streams' session close time: a session ending before it is closed."""
    return stream_time - gap - grace


def is_late(end: int, gap: int, grace: int, stream_time: int) -> bool:
    """Whether a record whose session would end at `end` comes too late (dropped)."""
    return end < close_time(gap, grace, stream_time)


def closes_at(end: int, gap: int, grace: int) -> int:
    """The first stream time at which a session ending at `end` is closed (an event-time timer)."""
    return end + gap + grace + 1


def expired_message(topic: str | None, partition: int | None, offset: int | None, time: int, start: int, end: int,
                    gap: int, grace: int, stream_time: int) -> str:
    """Kafka Streams' log line for a record dropped from a closed session (whose bounds are inclusive)."""
    return (f"Skipping record for expired window. topic=[{topic}] partition=[{partition}] offset=[{offset}] "
            f"timestamp=[{time}] window=[{start},{end}] expiration=[{close_time(gap, grace, stream_time)}] "
            f"streamTime=[{stream_time}]")
