"""A stream-stream join's time rules (INNER, LEFT, RIGHT, FULL with ksqlDB's WITHIN and GRACE PERIOD). Pure.

As Kafka Streams' KStreamKStreamJoin computes ksqlDB's answers: each side's records are kept per
join key in a window store for the window's size (before + after) plus the grace period (24
hours when none is given), behind that side's own stream time (the largest record time its input
has seen). A record further behind its own side's stream time than that is late: dropped, in an
INNER join too. A record joins every record of the other side's store within WITHIN: a left
record at `t` the right ones in [t - before, t + after], a right one at `t` the left ones in
[t - after, t + before]; each pair is an output record, at the later of the two times.

A record of an outer side without a match comes out with NULLs for the other side:
- with a GRACE PERIOD (ksqlDB 0.28+), once stream time (the largest record time of both inputs)
  has passed the end of its window plus the grace period (a left record's window ends `after`
  past it, a right record's `before`), if no match came by then;
- without one (ksqlDB's semantics before GRACE PERIOD), at once when it comes without a match;
  the joined rows then come as its matches do.
"""

from __future__ import annotations

from ..window.timing import DEFAULT_GRACE_MS

LEFT, RIGHT = 0, 1

#: The join's layout step recorded beside a persistent query's checkpoint (`sinks/layout.py`).
LAYOUT = "each side's records per join key, by each side's stream time"


def retention_ms(within: tuple[int, int], grace: int | None) -> int:
    """How long behind its side's stream time a record is kept: the window's size (before +
    after) plus the grace period, Kafka Streams' 24 hours when none is given."""
    before, after = within
    return before + after + (DEFAULT_GRACE_MS if grace is None else grace)


def is_late(time: int, own_stream: int, within: tuple[int, int], grace: int | None) -> bool:
    """Whether a record at `time` is dropped: further behind its own side's stream time
    (`own_stream`, the record's own time included) than the store keeps records."""
    return time < own_stream - retention_ms(within, grace)


def joins(side: int, time: int, other_time: int, within: tuple[int, int]) -> bool:
    """Whether a record of `side` at `time` and one of the other side at `other_time` are within WITHIN."""
    before, after = within
    left, right = (time, other_time) if side == LEFT else (other_time, time)
    return left - before <= right <= left + after


def closes_at(side: int, time: int, within: tuple[int, int], grace: int) -> int:
    """The stream time a record of `side` at `time` waits for a match until (its window's end
    plus the grace period): past it, an unmatched one comes out NULL-padded."""
    before, after = within
    return time + (after if side == LEFT else before) + grace


def unmatched_due(side: int, time: int, within: tuple[int, int], grace: int | None, stream: int) -> bool:
    """Whether an unmatched record of an outer side comes out NULL-padded at stream time `stream`
    (both inputs' largest record time): at once without a GRACE PERIOD, else once past `closes_at`."""
    return grace is None or stream > closes_at(side, time, within, grace)


def expires_at(time: int, within: tuple[int, int], grace: int | None) -> int:
    """The stream time of both inputs past which a record at `time` leaves the state: its own
    side's store has dropped it (its side's stream time is past `time` + the retention), or every
    record of the other side that could meet it (within the window's size of it) is late."""
    before, after = within
    return time + retention_ms(within, grace) + before + after
