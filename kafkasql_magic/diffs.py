"""Materialize's SUBSCRIBE output on the driver: each collected micro-batch -> diff rows
(`mz_timestamp`, `mz_diff`, then the columns).

The built frame (engine/build/subscribe.py) hands over, per row, a time, a code, the columns
and an identity. Without an identity the code is the row's diff (an append-only record's +1,
a diff join's change). With one (a changelog's key, an aggregation's group) the row replaces
what that identity held (code +1) or deletes it (code -1): the identity's previous row is
retracted (-1) and the new one inserted (+1), so this keeps the last row per identity.

Rows equal at one time are consolidated into one diff (diffs adding up to 0 vanish), as
Materialize consolidates. The snapshot (the first micro-batch, when the inputs held records
at start: it reads every record there was) is consolidated at one `mz_timestamp`, its newest
change's time; `WITH (SNAPSHOT = false)` keeps the state it builds and emits none of it.
"""

from __future__ import annotations

from typing import Any


def _hashable(value: Any):
    """Rows (tuples) holding STRUCT (dict), ARRAY (list) and MAP values as dict keys."""
    if isinstance(value, dict):
        return ("{}", tuple((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_hashable(v) for v in value))
    return value


class ChangeTracker:
    """One SUBSCRIBE's diffs: `batch(rows)` per micro-batch, in order.

    `snapshot`: the first batch is the snapshot (the inputs held records when the SUBSCRIBE
    started); `emit_snapshot`: False for `WITH (SNAPSHOT = false)`."""

    def __init__(self, *, snapshot: bool, emit_snapshot: bool = True):
        self._snapshot_pending = snapshot
        self._emit_snapshot = emit_snapshot
        self._held: dict[Any, tuple] = {}  # identity -> its current row

    def batch(self, rows: list[tuple]) -> list[tuple]:
        """Rows (time, code, *columns, identity) -> diff rows (mz_timestamp, mz_diff, *columns)."""
        changes: dict[tuple, list] = {}  # (time, hashable row) -> [diff, row]

        def add(time, row, diff):
            slot = changes.setdefault((time, _hashable(row)), [0, row])
            slot[0] += diff

        for time, code, *columns, identity in rows:
            row = tuple(columns)
            if identity is None:
                add(time, row, code)
                continue
            old = self._held.pop(identity, None)
            if old is not None:
                add(time, old, -1)
            if code > 0:
                self._held[identity] = row
                add(time, row, 1)
        snapshot, self._snapshot_pending = self._snapshot_pending, False
        if snapshot:
            return self._snapshot(changes) if self._emit_snapshot else []
        return [(time, diff, *row) for (time, _), (diff, row) in sorted(changes.items(), key=_by_time) if diff]

    @staticmethod
    def _snapshot(changes: dict[tuple, list]) -> list[tuple]:
        """Every change of the snapshot at one time, the newest among them."""
        at = max((time for time, _ in changes if time is not None), default=None)
        merged: dict[Any, list] = {}
        for (_, key), (diff, row) in changes.items():
            slot = merged.setdefault(key, [0, row])
            slot[0] += diff
        return [(at, diff, *row) for diff, row in merged.values() if diff]


def _by_time(item) -> tuple:
    (time, _), _ = item
    return (time is None, time if time is not None else 0)
