"""Materialize's SUBSCRIBE output on the driver: each collected micro-batch -> diff rows
(`mz_timestamp`, `mz_diff`, then the columns).

The built frame (engine/subscribe/frame_spark.py) hands over, per row, a time, a code, the columns
and an identity. Without an identity the code is the row's diff (an append-only record's +1,
a diff join's change). With one (a changelog's key, an aggregation's group) the row replaces
what that identity held (code +1) or deletes it (code -1): the identity's previous row is
retracted (-1) and the new one inserted (+1), so this keeps the last row per identity.

Rows equal at one time are consolidated into one diff (diffs adding up to 0 vanish), as
Materialize consolidates. The snapshot (the first micro-batch, when the inputs held records
at start: it reads every record there was) is consolidated at one `mz_timestamp`, its newest
change's time; `WITH (SNAPSHOT = false)` keeps the state it builds and emits none of it.
`ENVELOPE UPSERT | DEBEZIUM (KEY (...))` then turns each time's diffs into one row per key
(KeyedEnvelope).
"""

from __future__ import annotations

from typing import Any

from .errors import StatementError

#: ENVELOPE UPSERT's and DEBEZIUM's `mz_state` values.
INSERT, UPSERT, DELETE, KEY_VIOLATION = "insert", "upsert", "delete", "key_violation"


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

    def __init__(self, *, snapshot: bool, emit_snapshot: bool = True, envelope: "KeyedEnvelope | None" = None):
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


class KeyedEnvelope:
    """`ENVELOPE UPSERT | DEBEZIUM (KEY (...))`: per time and key, what that time's diffs did to
    the key, as Materialize shows it. Columns: mz_timestamp, mz_state, the key columns, then
    UPSERT: the other columns (`upsert` and the new row, `delete` with NULLs when the key's rows
    only went); DEBEZIUM: `before_` and `after_` copies of them (`insert`, `upsert`, `delete`).
    More than one row going in (or, for DEBEZIUM, out) is a `key_violation`, values NULL."""

    def __init__(self, columns: list[str], kind: str, keys: tuple[str, ...]):
        position = {c.lower(): i for i, c in enumerate(columns)}
        missing = [k for k in keys if k.lower() not in position]
        if missing:
            raise StatementError(f'column "{missing[0]}" does not exist')
        self._debezium = kind == "DEBEZIUM"
        self._keys = [position[k.lower()] for k in keys]
        self._values = [i for i in range(len(columns)) if i not in self._keys]
        values = [columns[i] for i in self._values]
        if self._debezium:
            values = [f"before_{v}" for v in values] + [f"after_{v}" for v in values]
        self.names = ["mz_timestamp", "mz_state", *(columns[i] for i in self._keys), *values]

    def rows(self, diffs: list[tuple]) -> list[tuple]:
        keys: dict[tuple, list] = {}  # (time, hashable key) -> [key, rows in, the row in, rows out, the row out]
        for time, diff, *columns in diffs:
            key = tuple(columns[i] for i in self._keys)
            slot = keys.setdefault((time, _hashable(key)), [key, 0, None, 0, None])
            side = 1 if diff > 0 else 3
            slot[side] += abs(diff)
            slot[side + 1] = columns
        return [(time, *self._row(*slot)) for (time, _), slot in keys.items()]

    def _row(self, key, added, new, removed, old) -> tuple:
        empty = (None,) * len(self._values)
        values = (lambda row: empty if row is None else tuple(row[i] for i in self._values))
        if added > 1 or (self._debezium and removed > 1):
            return (KEY_VIOLATION, *key, *empty, *(empty if self._debezium else ()))
        if not self._debezium:
            return (UPSERT, *key, *values(new)) if added else (DELETE, *key, *empty)
        state = UPSERT if added and removed else INSERT if added else DELETE
        return (state, *key, *values(old), *values(new))
