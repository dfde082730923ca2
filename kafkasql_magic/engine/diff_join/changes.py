"""What a change does in a Materialize diff join, per record key and per join key: the rules the
keyed steps (state_spark.py) apply. Pure, and importing nothing, so that Spark's Python workers
load it cheaply."""

from __future__ import annotations

import heapq


def in_order(changes, side, partition, offset, time) -> list:
    """Changes in the order they happened: each input partition's by offset (a record key's
    changes stay in order), the partitions merged by record time. The other arguments pick a
    change's input, partition, offset and time."""
    runs: dict[tuple, list] = {}
    for change in changes:
        runs.setdefault((side(change), partition(change)), []).append(change)
    return list(heapq.merge(*(sorted(run, key=offset) for _, run in sorted(runs.items(), key=_run_order)),
                            key=lambda c: (time(c) is None, time(c) or 0)))


def _run_order(item):
    (side, partition), _ = item
    return (side, partition is None, partition or 0)


def changed_rows(held: tuple | None, new: tuple | None) -> tuple[list[tuple[tuple, int]], tuple | None]:
    """A changelog's record key held `held` ((join key, row) or None) and now holds `new` (None: a
    delete) -> the multiset's changes ((join key, row), diff): the old row retracted under its
    join key, the new one inserted under its own; and what the key holds after."""
    if new == held:
        return [], held
    return [*([(held, -1)] if held is not None else []), *([(new, 1)] if new is not None else [])], new


def matched_changes(held: list[dict], changes, preserved: tuple[bool, bool]) -> dict[tuple, int]:
    """One join key's changes in order, (input, row, diff, time), against `held` (per input, row ->
    count; updated in place) -> the result's diffs, (left row, right row, time) -> diff, a row
    None where that input is missing (an outer join's preserved row without a match)."""
    out: dict[tuple, int] = {}

    def emit(side, row, other, diff, at):
        pair = (row, other) if side == 0 else (other, row)
        out[(*pair, at)] = out.get((*pair, at), 0) + diff

    totals = [sum(rows.values()) for rows in held]
    for side, row, diff, at in changes:
        other = 1 - side
        mine, theirs = held[side], held[other]
        before = totals[side]
        after = totals[side] = before + diff
        if preserved[other] and theirs and before == 0 and after > 0:  # their first match
            for match, count in theirs.items():
                emit(other, match, None, -count, at)
        for match, count in theirs.items():
            emit(side, row, match, diff * count, at)
        if preserved[side] and not theirs:
            emit(side, row, None, diff, at)
        if preserved[other] and theirs and before > 0 and after == 0:  # their last match went
            for match, count in theirs.items():
                emit(other, match, None, count, at)
        mine[row] = mine.get(row, 0) + diff
        if not mine[row]:
            del mine[row]
    return out
