"""Which tables a table-table join's result row is made of, given each table's row. Pure: no Spark."""

from __future__ import annotations

#: Join kind -> whether a result row exists, given (left row present, right row present).
PRESENT = {"INNER": lambda l, r: l and r, "LEFT": lambda l, r: l, "RIGHT": lambda l, r: r,
           "FULL": lambda l, r: l or r}


def joined_tables(kinds, rows) -> set[int] | None:
    """The tables a key's result row is made of, joined left-deep as ksqlDB does (`kinds`: the
    joins in order; `rows`: each table's row, None when absent); None: no result row."""
    joined = {0} if rows[0] is not None else None
    for right, kind in enumerate(kinds, 1):
        here = rows[right] is not None
        joined = (joined or set()) | ({right} if here else set()) if PRESENT[kind](joined is not None, here) else None
    return joined


def later(*times):
    """The latest of the known times (None: none known)."""
    known = [t for t in times if t is not None]
    return max(known) if known else None


def merged(changes, side, order, time):
    """One key's changes in order: each table's by offset, the tables merged by record time
    (`side`, `order`, `time`: the indexes of a change's table, offset and time)."""
    import heapq

    by_side = [sorted((c for c in changes if c[side] == i), key=lambda c: c[order])
               for i in sorted({c[side] for c in changes})]
    return heapq.merge(*by_side, key=lambda c: c[time])


def key_changes(kinds, current: list, times: list, changes) -> list[tuple]:
    """One join key's changes applied to its tables' rows (`current`, `times`: each table's
    latest row and its time, None when absent; updated in place) -> the key's output rows, each
    (each table's row in it or None, time, the table changed, tombstone). `changes`: the key's
    (table, row, time, tombstone) in processing order (`merged`; a tombstone's row holds its
    headers). A change
    emits the key's new result row when the table changed is or was part of it, or a tombstone
    when the row goes, with the rows it had (the deleted one's last row carries the headers)."""
    out = []
    for side, row, at, tomb in changes:
        last, before = list(current), joined_tables(kinds, current)
        current[side], times[side] = (None if tomb else row), at
        after = joined_tables(kinds, current)
        if after is not None and (side in after or side in (before or ())):
            out.append(([current[i] if i in after else None for i in range(len(current))],
                        later(at, *(times[i] for i in after)), side, False))
        elif after is None and before is not None:
            gone = [row if i == side else last[i] if i in before else None for i in range(len(current))]
            out.append((gone, later(at, *(times[i] for i in before if i != side)), side, True))
    return out
