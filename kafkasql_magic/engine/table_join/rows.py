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
