"""A stream-stream join's time rules (INNER, LEFT, RIGHT, FULL with ksqlDB's WITHIN and GRACE PERIOD). Pure.

Each side's records are held for the window's size plus the grace period behind stream time, as
ksqlDB's join stores hold them; a record that comes later than that is dropped, in an INNER join
too (ksqlDB: stored no more, so no later record of the other side meets it). Stream time is the
smaller of the two inputs' largest record times (Spark's `min` watermark policy): ksqlDB reads
its inputs in time order, Spark a micro-batch of each input as far as it goes, so the larger one
would drop the lagging input's records as late while a query catches up.

A record without a match is emitted with NULLs for the other side once no match can come any
more: when stream time has passed the record's time plus the window and the grace period
(ksqlDB 0.28+). On Spark that is an event-time watermark on each side and a time-range condition
between the sides' record times, so Spark keeps each side's records as state until the other
side's watermark passes their window, then emits the unmatched ones and drops them.

The watermark's delay is the window's size (before + after) plus the grace period: ksqlDB keeps
each side's records that long (its join stores' retention), so a record out of order but inside
that time still meets every record of the other side in its window. Spark's one watermark both
drops late rows and closes windows, so an unmatched record comes out later than in ksqlDB: once
stream time has passed its window plus this delay.

The event-time columns are the record times plus 1 ms: Spark's watermark starts at 0 and a row
at or below the watermark is late, so a record at time 0 (Kafka's earliest) would never join.
Both sides move alike, so the WITHIN condition and the watermarks' distances are unchanged.
"""

from __future__ import annotations

from ..window.timing import DEFAULT_GRACE_MS

#: Added to each record time for Spark's event time: its watermark starts at 0, and a row at or
#: below the watermark is late, so a record at time 0 would never join.
EVENT_TIME_SHIFT_MS = 1


def hold_ms(within: tuple[int, int], grace: int | None) -> int:
    """How long behind stream time each side's records are held (the watermark's delay): the
    window's size (before + after) plus the grace period, ksqlDB's 24 hours when none is given."""
    before, after = within
    return before + after + (DEFAULT_GRACE_MS if grace is None else grace)

