"""The stateful steps of table-table joins: one bucket's changes (a pandas frame) and its state
-> the changed result rows, run by `applyInPandasWithState` (`build_spark.py`)."""

from __future__ import annotations

import json

from .rows import joined_tables


#: What the join step emits besides each table's row as JSON (`row_columns`; NULL: no row):
#: the record time, which table caused the change (its headers go to the output record),
#: whether it is a tombstone, and the join key.
RECORD_COLUMNS = ["__rt", "__hside", "__tomb", "__jk"]
#: A bucket of join keys, as JSON: each key (as `_text`) -> the latest row and time of each
#: table, [row0, time0, row1, time1, ...] (a string, as PySpark's worker does not read array
#: types in a state's schema).
PRIMARY_STATE = "rows string"
#: Join keys are spread over this many groups (a group per key costs Spark a pandas frame and
#: a state row per key: measured in bench/); part of the state's layout, so never changed for
#: a running query.
BUCKETS = 256
FOREIGN_STATE = "tables string"


def row_columns(tables: int) -> list[str]:
    """The step's output columns holding each table's row."""
    return [f"__t{i}" for i in range(tables)]


def _merged(changes, side="__side", order="__order", time="__rt"):
    """One key's changes in order: each table's by offset, the tables merged by record time
    (`side`, `order`, `time`: where a change holds them, names for dicts, indexes for tuples)."""
    import heapq

    by_side = [sorted((c for c in changes if c[side] == i), key=lambda c: c[order])
               for i in sorted({c[side] for c in changes})]
    return heapq.merge(*by_side, key=lambda c: c[time])


def _emitted(key, rows, time, side, tomb=False):
    return {**dict(zip(row_columns(len(rows)), rows)), "__rt": time, "__hside": side, "__tomb": tomb, "__jk": key}


def _later(*times):
    known = [t for t in times if t is not None]
    return max(known) if known else None


def primary_key_step(*kinds: str):
    """One bucket's changes -> the changed result rows, the tables joined on their primary keys
    by `kinds` (one per join). The bucket's state holds, per join key (as `_text`), the latest
    row and time of each table (PRIMARY_STATE). A change emits its key's new row when the table
    changed is or was part of it, or a tombstone when the row goes."""
    tables = len(kinds) + 1

    def step(bucket, chunks, state):
        import pandas as pd

        frame = pd.concat(list(chunks))
        rows = json.loads(state.get[0]) if state.exists else {}
        by_key: dict[str, list] = {}
        columns = [frame[c].tolist() for c in ("__side", "__jk", "__row", "__rt", "__order", "__tomb")]
        for change in zip(*columns):
            by_key.setdefault(_text(change[1]), []).append(change)
        out = []
        for text, changes in by_key.items():
            kept = rows.pop(text, None) or [None] * (2 * tables)
            current, times = kept[0::2], kept[1::2]
            for side, key, row, at, _, tomb in _merged(changes, side=0, order=4, time=3):
                last, before = list(current), joined_tables(kinds, current)
                current[side], times[side] = (None if tomb else row), at
                after = joined_tables(kinds, current)
                if after is not None and (side in after or side in (before or ())):
                    out.append(_emitted(key, [current[i] if i in after else None for i in range(tables)],
                                        _later(at, *(times[i] for i in after)), side))
                elif after is None and before is not None:  # the row goes: its last rows carry the headers
                    gone = [row if i == side else last[i] if i in before else None for i in range(tables)]
                    out.append(_emitted(key, gone, _later(at, *(times[i] for i in before if i != side)), side,
                                        tomb=True))
            if any(r is not None for r in current):
                rows[text] = [value for pair in zip(current, times) for value in pair]
        if rows:
            state.update((json.dumps(rows),))
        else:
            state.remove()
        yield pd.DataFrame(out, columns=[*row_columns(tables), *RECORD_COLUMNS])

    return step


def foreign_key_step(kind: str, *more: str):
    """All the changes (one group) -> the changed result rows of a foreign-key join (`kind`) and
    the joins on the left table's primary key after it (`more`). The state holds every left row
    with its foreign key (and its primary key as JSON text), every right row, and each later
    table's rows by primary key. A left or right change emits each row it touches, or a
    tombstone where the row is gone or never was (Kafka Streams' foreign-key join cannot tell);
    a later table's change emits as a primary-key join does. Each row carries its primary key
    (`__pk`): a later RIGHT or FULL join's row may have no left row to name it."""
    kinds = (kind, *more)
    tables = len(kinds) + 1

    def step(key, chunks, state):
        import pandas as pd

        stored = json.loads(state.get[0]) if state.exists else {"lefts": {}, "rights": {}}
        # left key -> [fk, row, time, primary key]; right key -> [row, time]; later tables: primary key -> [row, time]
        lefts, rights = stored["lefts"], stored["rights"]
        later = [stored.setdefault(f"t{i}", {}) for i in range(2, tables)]
        pointing: dict[str, set] = {}
        owners: dict[str, str] = {}  # a left row's primary key -> its left key
        for left_key, (fk, _, _, *pk) in lefts.items():
            pointing.setdefault(fk, set()).add(left_key)
            owners.update({pk[0]: left_key} if pk else {})

        def result(pk, left_key=None):
            """(the tables in the result row of primary key `pk` (of left row `left_key`), or None;
            each table's row; each table's time)"""
            left = lefts.get(owners.get(pk) if left_key is None else left_key)
            fk, row, at = left[:3] if left is not None else (None, None, None)
            found = [rights.get(fk, [None, None]) if left is not None else [None, None],
                     *(t.get(pk, [None, None]) for t in later)]
            rows, times = [row, *(f[0] for f in found)], [at, *(f[1] for f in found)]
            return joined_tables(kinds, rows), rows, times

        def row_of(pk, joined, rows, times, at, side):
            return {**_emitted(None, [rows[i] if i in joined else None for i in range(tables)],
                               _later(at, *(times[i] for i in joined)), side), "__pk": pk}

        def gone(pk, rows, change, times):
            side = change["__side"]
            return {**_emitted(None, [change["__row"] if i == side else rows[i] for i in range(tables)],
                               _later(change["__rt"], times[0] if side else None), side, tomb=True), "__pk": pk}

        out = []
        for change in _merged(pd.concat(list(chunks)).to_dict("records")):
            side, at = change["__side"], change["__rt"]
            if side >= 2:  # a later table's row, keyed like the left table
                pk = change["__pk"]
                before = result(pk)[0]
                if change["__tomb"]:
                    later[side - 2].pop(pk, None)
                else:
                    later[side - 2][pk] = [change["__row"], at]
                joined, rows, times = result(pk)
                if joined is not None and (side in joined or side in (before or ())):
                    out.append(row_of(pk, joined, rows, times, at, side))
                elif joined is None and before is not None:
                    out.append(gone(pk, rows, change, times))
                continue
            fk = _loose_text(change["__jk"])
            if side == 1:
                if change["__tomb"]:
                    rights.pop(fk, None)
                else:
                    rights[fk] = [change["__row"], at]
                for left_key in sorted(pointing.get(fk, ())):
                    pk = lefts[left_key][3] if len(lefts[left_key]) > 3 else None
                    joined, rows, times = result(pk, left_key)
                    out.append(gone(pk, rows, change, times) if joined is None
                               else row_of(pk, joined, rows, times, at, 1))
                continue
            left_key, pk = _text(change["__lk"]), change["__pk"]
            old = lefts.pop(left_key, None)
            if old is not None:
                pointing.get(old[0], set()).discard(left_key)
                owners.pop(old[3] if len(old) > 3 else None, None)
            if change["__tomb"]:
                if old is not None:  # the deleted row's last result goes (a later RIGHT join's row stays)
                    joined, rows, times = result(pk)
                    out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                               else row_of(pk, joined, rows, times, at, 0))
                continue
            lefts[left_key] = [fk, change["__row"], at, pk]
            pointing.setdefault(fk, set()).add(left_key)
            owners[pk] = left_key
            joined, rows, times = result(pk)
            out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                       else row_of(pk, joined, rows, times, at, 0))
        state.update((json.dumps(stored),))
        yield pd.DataFrame(out, columns=[*row_columns(tables), *RECORD_COLUMNS, "__pk"])

    return step


def _loose_text(value) -> str:
    """`_text` of a value from a pandas column that may hold NULLs: pandas reads such an integer
    column as floats (NaN for NULL), so a whole float is the integer it was (exact up to 2**53)."""
    if isinstance(value, float):
        value = None if value != value else int(value) if value.is_integer() else value
    return _text(value)


def _text(value) -> str:
    """A key as text for the state's JSON: bytes in base64, anything else as JSON."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return json.dumps(value, default=str, sort_keys=True)
