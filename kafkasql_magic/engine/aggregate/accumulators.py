"""Incremental accumulators: each aggregate function as ksqlDB's UDAFs compute it one record at a
time (an initial state, the state after one more record's arguments, the current result), so a
group's value can be written after every record (`cache.max.bytes.buffering` = 0).

A state is a tuple of plain Python values, one per field; `Accumulator.fields` names each
field's kind so the keyed state can declare its schema: `long` (a count), `result` (a value of
the aggregate's result type), `sum` (a running sum of the argument, for AVG), `args` (a list of
argument values). NULL arguments are skipped as ksqlDB's UDAFs skip them, except by COLLECT_LIST
and COLLECT_SET, which keep them. `merge` joins two states as ksqlDB's UDAFs merge the aggregates
of two SESSION windows a record bridges. Pure: no Spark here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

State = tuple


@dataclass(frozen=True)
class Accumulator:
    fields: tuple[str, ...]
    initial: State
    add: Callable[[State, tuple], State]  # (state, one record's arguments) -> the next state
    result: Callable[[State], Any]
    #: (state, a retracted record's arguments) -> the state without that record; None: the
    #: aggregate cannot take a record back (ksqlDB's UDAFs without `undo`).
    subtract: Callable[[State, tuple], State] | None = None
    #: (state, a later session's state, the bridging record's arguments) -> the merged state, as
    #: ksqlDB's UDAF `merge` (the first state's values first); None: no merge (LATEST_BY_OFFSET and
    #: EARLIEST_BY_OFFSET pick by processing order, which a state does not hold).
    merge: Callable[[State, State, tuple], State] | None = None


def wrapped(value: int, bits: int | None) -> int:
    """`value` as a Java integer of `bits` bits holds it (ksqlDB's SUM of INT or BIGINT overflows
    as Java's arithmetic does); unchanged when `bits` is None."""
    if bits is None:
        return value
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _plus(s, other, a):
    return tuple(x + y for x, y in zip(s, other))


def _count(nargs: int, bits: int | None) -> Accumulator:
    if nargs == 0:  # COUNT(*) and COUNT(): every record
        return Accumulator(("long",), (0,), lambda s, a: (s[0] + 1,), lambda s: s[0], merge=_plus)
    return Accumulator(("long",), (0,), lambda s, a: s if a[0] is None else (s[0] + 1,), lambda s: s[0], merge=_plus)


def _sum(nargs: int, bits: int | None) -> Accumulator:
    """ksqlDB's SUM starts at 0 and skips NULLs; of INT it stays INT (wrapping on overflow)."""
    return Accumulator(("result",), (0,), lambda s, a: s if a[0] is None else (wrapped(s[0] + a[0], bits),),
                       lambda s: s[0], merge=lambda s, o, a: (wrapped(s[0] + o[0], bits),))


def _avg(nargs: int, bits: int | None) -> Accumulator:
    """ksqlDB's AVERAGE: a sum and a count of the non-NULL values; 0 when there are none."""
    return Accumulator(("sum", "long"), (0, 0),
                       lambda s, a: s if a[0] is None else (wrapped(s[0] + a[0], bits), s[1] + 1),
                       lambda s: s[0] / s[1] if s[1] else 0,
                       merge=lambda s, o, a: (wrapped(s[0] + o[0], bits), s[1] + o[1]))


def _extreme(better: Callable[[Any, Any], bool]) -> Callable[[int, int | None], Accumulator]:
    def make(nargs: int, bits: int | None) -> Accumulator:
        def add(s, a):
            return s if a[0] is None or (s[0] is not None and not better(a[0], s[0])) else (a[0],)
        return Accumulator(("result",), (None,), add, lambda s: s[0], merge=lambda s, o, a: add(s, o))
    return make


def _collect(distinct: bool) -> Callable[[int, int | None], Accumulator]:
    """COLLECT_LIST / COLLECT_SET: every value in record order, NULL too (ksqlDB's Collect
    UDAFs add whatever they get; the set keeps a value's first arrival only)."""
    def make(nargs: int, bits: int | None) -> Accumulator:
        def add(s, a):
            return s if distinct and a[0] in s[0] else ([*s[0], a[0]],)

        def merge(s, other, a):
            return ([*s[0], *(v for v in other[0] if not (distinct and v in s[0]))],)
        return Accumulator(("args",), ([],), add, lambda s: list(s[0]), merge=merge)
    return make


def _count_distinct(nargs: int, bits: int | None) -> Accumulator:
    """COUNT_DISTINCT: the distinct non-NULL values seen."""
    def add(s, a):
        return s if a[0] is None or a[0] in s[0] else ([*s[0], a[0]],)
    return Accumulator(("args",), ([],), add, lambda s: len(s[0]),
                       merge=lambda s, other, a: ([*s[0], *(v for v in other[0] if v not in s[0])],))


def _by_offset(latest: bool) -> Callable[[int, int | None], Accumulator]:
    """LATEST_BY_OFFSET / EARLIEST_BY_OFFSET over records added in offset order: the last (or
    first) non-NULL value, as ksqlDB's default ignores NULLs. With more arguments (ksqlDB's
    `(val, ignoreNulls)`, `(val, N)`, `(val, N, ignoreNulls)`) the state is the values kept
    (NULLs too when not ignored) and N (0: the one-value forms), which each record's literal
    arguments give."""
    def make(nargs: int, bits: int | None) -> Accumulator:
        if nargs == 1:
            def add(s, a):
                return s if a[0] is None or (not latest and s[0] is not None) else (a[0],)
            return Accumulator(("result",), (None,), add, lambda s: s[0])

        def add_kept(s, a):
            n, ignore_nulls = by_offset_options(a)
            kept = s[0]
            if a[0] is not None or not ignore_nulls:
                if latest:
                    kept = [*kept, a[0]][-max(n, 1):]
                elif len(kept) < max(n, 1):
                    kept = [*kept, a[0]]
            return (kept, n)
        return Accumulator(("args", "long"), ([], 0), add_kept,
                           lambda s: list(s[0]) if s[1] else (s[0][-1] if s[0] else None))
    return make


def by_offset_options(args: tuple) -> tuple[int, bool]:
    """(N, ignoreNulls) of a *_BY_OFFSET call's arguments after its value: N is 0 for the
    one-value forms, ignoreNulls True unless given (a BOOLEAN; an INT is N)."""
    n, ignore_nulls = 0, True
    for value in args[1:]:
        if isinstance(value, bool):
            ignore_nulls = value
        elif value is not None:
            n = value
    return n, ignore_nulls


def _undo_count(nargs: int, bits: int | None) -> Accumulator:
    if nargs == 0:
        return replace(_count(nargs, bits), subtract=lambda s, a: (s[0] - 1,))
    return replace(_count(nargs, bits), subtract=lambda s, a: s if a[0] is None else (s[0] - 1,))


def _undo_sum(nargs: int, bits: int | None) -> Accumulator:
    return replace(_sum(nargs, bits), subtract=lambda s, a: s if a[0] is None else (wrapped(s[0] - a[0], bits),))


def _undo_avg(nargs: int, bits: int | None) -> Accumulator:
    return replace(_avg(nargs, bits),
                   subtract=lambda s, a: s if a[0] is None else (wrapped(s[0] - a[0], bits), s[1] - 1))


def _undo_collect_list(nargs: int, bits: int | None) -> Accumulator:
    """ksqlDB's COLLECT_LIST takes a value back by removing its last occurrence."""
    def subtract(s, a):
        if a[0] not in s[0]:
            return s
        at = len(s[0]) - 1 - s[0][::-1].index(a[0])
        return ([*s[0][:at], *s[0][at + 1:]],)
    return replace(_collect(distinct=False)(nargs, bits), subtract=subtract)


def _undo_extreme(pick: Callable) -> Callable[[int, int | None], Accumulator]:
    """MIN / MAX over rows that come and go (Materialize's tables; ksqlDB refuses them there): the
    non-NULL values as a multiset, one occurrence taken back per retracted row."""
    def make(nargs: int, bits: int | None) -> Accumulator:
        def subtract(s, a):
            if a[0] is None or a[0] not in s[0]:
                return s
            at = s[0].index(a[0])
            return ([*s[0][:at], *s[0][at + 1:]],)
        return Accumulator(("args",), ([],), lambda s, a: s if a[0] is None else ([*s[0], a[0]],),
                           lambda s: pick(s[0]) if s[0] else None, subtract)
    return make


#: aggregate name -> the factory of an accumulator that can also take a record back (a table's
#: aggregation retracts a row's old version): ksqlDB's table UDAFs (those with `undo`) and MIN/MAX.
UNDOABLE: dict[str, Callable[[int, int | None], Accumulator]] = {
    "COUNT": _undo_count,
    "SUM": _undo_sum,
    "AVG": _undo_avg,
    "COLLECT_LIST": _undo_collect_list,
    "MIN": _undo_extreme(min),
    "MAX": _undo_extreme(max),
}


def undoable(name: str, nargs: int, bits: int | None = None) -> Accumulator:
    """The accumulator of aggregate `name` with a `subtract` (see `UNDOABLE`)."""
    return UNDOABLE[name](nargs, bits)


def _top(distinct: bool) -> Callable[[int, int | None], Accumulator]:
    """TOPK(x, k) / TOPKDISTINCT(x, k): the k greatest non-NULL values (distinct ones), greatest
    first; `k` is each record's second argument (a literal). TOPK with more columns has none."""
    def make(nargs: int, bits: int | None) -> Accumulator:
        if nargs != 2:
            raise KeyError(f"TOPK over {nargs} arguments has no accumulator")
        def add(s, a):
            if a[0] is None or (distinct and a[0] in s[0]):
                return s
            return (sorted([*s[0], a[0]], reverse=True)[:a[1]],)

        def merge(s, other, a):
            merged = sorted([*s[0], *(v for v in other[0] if not (distinct and v in s[0]))], reverse=True)
            return (merged[:a[1]],)
        return Accumulator(("args",), ([],), add, lambda s: list(s[0]), merge=merge)
    return make


#: ksql aggregate name -> accumulator factory (number of arguments, integer bits of the sum or None).
ACCUMULATORS: dict[str, Callable[[int, int | None], Accumulator]] = {
    "COUNT": _count,
    "SUM": _sum,
    "AVG": _avg,
    "MIN": _extreme(lambda new, old: new < old),
    "MAX": _extreme(lambda new, old: new > old),
    "COLLECT_LIST": _collect(distinct=False),
    "COLLECT_SET": _collect(distinct=True),
    "COUNT_DISTINCT": _count_distinct,
    "LATEST_BY_OFFSET": _by_offset(latest=True),
    "EARLIEST_BY_OFFSET": _by_offset(latest=False),
    "TOPK": _top(distinct=False),
    "TOPKDISTINCT": _top(distinct=True),
}


def accumulator(name: str, nargs: int, bits: int | None = None) -> Accumulator:
    """The accumulator of aggregate `name` called with `nargs` arguments; `bits`: the width of
    an integral SUM/AVG argument (32 or 64) whose sum wraps as Java's does."""
    return ACCUMULATORS[name](nargs, bits)


def has_accumulator(name: str, nargs: int | None = None) -> bool:
    """Whether aggregate `name` (called with `nargs` arguments, when given) has an accumulator."""
    return name in ACCUMULATORS and not (name == "TOPK" and nargs is not None and nargs != 2)
