"""Reading Materialize's SUBSCRIBE diffs in tests: the records produced, the handle's rows once
they arrived, and what the diffs add up to."""

from __future__ import annotations

import time
from collections import Counter

import pandas as pd


def records(rows, partition: int = 0) -> list[dict]:
    """(key, value, timestamp) text triples as records for `produce`."""
    return [{"key": None if k is None else k.encode(), "value": None if v is None else v.encode(),
             "timestamp": t, "partition": partition} for k, v, t in rows]


def plain(row) -> tuple:
    """A result row with pandas' NULLs (NA, NaN) as None."""
    return tuple(None if v is pd.NA or (isinstance(v, float) and v != v) else v for v in row)


def rows_until(handle, count: int, timeout: float = 90) -> list[tuple]:
    """The handle's rows once `count` arrived (and a little longer, so that an extra row shows)."""
    deadline = time.monotonic() + timeout
    while len(handle.rows()) < count and time.monotonic() < deadline and handle.is_active:
        time.sleep(0.2)
    time.sleep(1.5)
    assert handle.failure is None, handle.failure
    return [plain(row) for row in handle.rows().itertuples(index=False)]


def consolidated(rows) -> Counter:
    """What the diffs add up to: each row's multiplicity."""
    total = Counter()
    for _, diff, *values in rows:
        total[tuple(values)] += diff
    return +total
