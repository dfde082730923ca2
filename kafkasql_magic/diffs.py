"""Materialize's SUBSCRIBE output on the driver: each collected micro-batch -> diff rows
(`mz_timestamp`, `mz_diff`, then the columns).

The built frame (engine/subscribe/frame_spark.py) hands over, per row, a time, a code, the
columns and an identity. Without an identity the code is the row's diff (an append-only
record's +1, a diff join's change, a changelog's change after its key's last row in keyed
state). With one (an aggregation's group) the row replaces what that identity held (code +1)
or deletes it (code -1): the identity's previous row is retracted (-1) and the new one
inserted (+1), so this keeps the last row per group.

Rows equal at one time are consolidated into one diff (diffs adding up to 0 vanish), as
Materialize consolidates. The snapshot (the records the inputs held when the SUBSCRIBE started,
read over as many micro-batches as maxRecordsPerTrigger makes) is held, consolidated, until
every offset present at start is read, then shown at one `mz_timestamp`, its newest change's
time; `WITH (SNAPSHOT = false)` keeps the state it builds and emits none of it.
`ENVELOPE UPSERT | DEBEZIUM (KEY (...))` then turns each time's diffs into one row per key
(KeyedEnvelope: per batch only, nothing kept between batches).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

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
    """One SUBSCRIBE's diffs: `batch(rows, read)` per micro-batch, in order.

    `snapshot_ends`: per source the query reads (in the order Spark lists them), partition ->
    the offset its records present at start end at; none with records: no snapshot.
    `emit_snapshot`: False for `WITH (SNAPSHOT = false)`."""

    def __init__(self, *, snapshot_ends: Sequence[Mapping[int, int]] = (), emit_snapshot: bool = True,
                 envelope: "KeyedEnvelope | None" = None):
        self._ends = [dict(e) for e in snapshot_ends]
        self._snapshot: dict | None = {} if any(self._ends) else None  # hashable row -> [diff, row], until read
        self._snapshot_time = None
        self._emit_snapshot = emit_snapshot
        self._held: dict[Any, tuple] = {}  # group -> its current row
        self.envelope = envelope

    def names(self, names: list[str]) -> list[str]:
        """The rows' column names, given the plan's (`mz_timestamp`, `mz_diff`, the columns)."""
        return self.envelope.names if self.envelope is not None else names

    def batch(self, rows: list[tuple], read: Sequence[Mapping[int, int]] | None = None) -> list[tuple]:
        """Rows (time, code, *columns, identity) -> the rows a SUBSCRIBE shows. `read`: where the
        batch ended, per source (None: unknown, the snapshot is taken as read)."""
        diffs = self.diffs(rows, read)
        return self.envelope.rows(diffs) if self.envelope is not None else diffs

    def diffs(self, rows: list[tuple], read: Sequence[Mapping[int, int]] | None = None) -> list[tuple]:
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
        if self._snapshot is not None:
            return self._held_snapshot(changes, read)
        return [(time, diff, *row) for (time, _), (diff, row) in sorted(changes.items(), key=_by_time) if diff]

    def _held_snapshot(self, changes: dict[tuple, list], read) -> list[tuple]:
        """The snapshot's changes added to those held; once every offset present at start is
        read, all of them at one time, the newest among them."""
        for (time, key), (diff, row) in changes.items():
            slot = self._snapshot.setdefault(key, [0, row])
            slot[0] += diff
            if time is not None and (self._snapshot_time is None or time > self._snapshot_time):
                self._snapshot_time = time
        if read is not None and not snapshot_read(self._ends, read):
            return []
        held, self._snapshot = self._snapshot, None
        if not self._emit_snapshot:
            return []
        return [(self._snapshot_time, diff, *row) for diff, row in held.values() if diff]


def snapshot_read(ends: Sequence[Mapping[int, int]], read: Sequence[Mapping[int, int]]) -> bool:
    """Whether a batch that ended at `read` (per source) read every offset in `ends`."""
    return all(i < len(read) and all(read[i].get(p, -1) >= o for p, o in end.items()) for i, end in enumerate(ends))


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
