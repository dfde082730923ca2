"""The lookup join's rules, pure: which records of one join key are processed first, and which
stream records make an output row.

Kafka Streams processes a stream-table join's inputs in record-time order (it picks the input
whose next record is oldest), so a stream record meets the table as it was at the record's time:
here one micro-batch's records of a key are processed by record time, a table change before a
stream record of the same time (the change is in place when the record looks), then by offset."""

from __future__ import annotations

#: The `__side` of a message: a stream record, or a change of the table (a row or a tombstone).
STREAM, TABLE = 0, 1


def processing_order(time: int | None, side: int, offset: int | None) -> tuple:
    """The sort key of one message among its join key's in a micro-batch."""
    return (time if time is not None else -1, -side, offset if offset is not None else -1)


def joins(row_found: bool, keeps_unmatched: bool) -> bool:
    """Whether a stream record makes an output row: it found the table's row, or the join is
    LEFT (the table's columns NULL)."""
    return row_found or keeps_unmatched
