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
`ENVELOPE UPSERT (KEY (...))` then turns each time's diffs into one row per key (UpsertEnvelope).
"""

from __future__ import annotations

from typing import Any

from .errors import StatementError

#: ENVELOPE UPSERT's `mz_state` values.
UPSERT, DELETE, KEY_VIOLATION = "upsert", "delete", "key_violation"


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

    def __init__(self, *, snapshot: bool, emit_snapshot: bool = True, envelope: "UpsertEnvelope | None" = None):
        self._snapshot_pending = snapshot
        self._emit_snapshot = emit_snapshot
        self._held: dict[Any, tuple] = {}  # identity -> its current row
        self.envelope = envelope

    def names(self, names: list[str]) -> list[str]:
        """The rows' column names, given the plan's (`mz_timestamp`, `mz_diff`, the columns)."""
        return self.envelope.names if self.envelope is not None else names

    def batch(self, rows: list[tuple]) -> list[tuple]:
        """Rows (time, code, *columns, identity) -> the rows a SUBSCRIBE shows."""
        diffs = self.diffs(rows)
        return self.envelope.rows(diffs) if self.envelope is not None else diffs

    def diffs(self, rows: list[tuple]) -> list[tuple]:
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


class UpsertEnvelope:
    """`ENVELOPE UPSERT (KEY (...))`: per time and key, what the key holds after that time's
    diffs: `upsert` and its row, `delete` (NULL values) when its rows only went, or
    `key_violation` (NULL values) when more than one row went in. Columns: mz_timestamp,
    mz_state, the key columns, then the others."""

    def __init__(self, columns: list[str], keys: tuple[str, ...]):
        position = {c.lower(): i for i, c in enumerate(columns)}
        missing = [k for k in keys if k.lower() not in position]
        if missing:
            raise StatementError(f'column "{missing[0]}" does not exist')
        self._keys = [position[k.lower()] for k in keys]
        self._values = [i for i in range(len(columns)) if i not in self._keys]
        self.names = ["mz_timestamp", "mz_state", *(columns[i] for i in self._keys),
                      *(columns[i] for i in self._values)]

    def rows(self, diffs: list[tuple]) -> list[tuple]:
        keys: dict[tuple, list] = {}  # (time, hashable key) -> [key, rows inserted, the row]
        for time, diff, *columns in diffs:
            key = tuple(columns[i] for i in self._keys)
            slot = keys.setdefault((time, _hashable(key)), [key, 0, None])
            if diff > 0:
                slot[1] += diff
                slot[2] = columns
        empty = (None,) * len(self._values)
        out = []
        for (time, _), (key, inserted, row) in keys.items():
            if inserted == 1:
                out.append((time, UPSERT, *key, *(row[i] for i in self._values)))
            else:
                out.append((time, DELETE if inserted == 0 else KEY_VIOLATION, *key, *empty))
        return out
