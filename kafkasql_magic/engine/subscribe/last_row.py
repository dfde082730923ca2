"""What a change of an identity (a changelog's key, an aggregation's group) does to a SUBSCRIBE's
diffs, given the row the identity held: the rule the keyed step (state_spark.py) applies per
change. Pure, and importing nothing, so that Spark's Python workers load it cheaply."""

from __future__ import annotations


def replaced(held: tuple | None, code: int, row: tuple) -> tuple[list[tuple[int, tuple]], tuple | None]:
    """One change of an identity (a changelog's key, an aggregation's group) that holds `held`
    (None: no row): code +1 it now holds `row`, -1 it is deleted. -> the diffs (diff, row) and
    the row it holds after: the old row retracted, the new one inserted (none when the row is
    the same: the two would consolidate away)."""
    new = row if code > 0 else None
    if new == held:
        return [], held
    return [*([(-1, held)] if held is not None else []), *([(1, new)] if new is not None else [])], new
