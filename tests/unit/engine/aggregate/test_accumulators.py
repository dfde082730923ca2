"""The incremental accumulators as ksqlDB's UDAFs compute them, one record at a time (no Spark)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kafkasql_magic.engine.aggregate.calls import SIGNATURES
from kafkasql_magic.engine.aggregate.accumulators import ACCUMULATORS, accumulator, wrapped


def run(name, values, nargs=1, bits=None):
    """The result after each value (each a record's one argument; `nargs=0`: no argument)."""
    acc = accumulator(name, nargs, bits)
    state, results = acc.initial, []
    for value in values:
        state = acc.add(state, (value,) if nargs else ())
        results.append(acc.result(state))
    return results


def test_count_of_rows_and_of_values():
    assert run("COUNT", [1, None, 3], nargs=0) == [1, 2, 3]  # COUNT(*) and COUNT()
    assert run("COUNT", [1, None, 3]) == [1, 1, 2]


def test_sum_starts_at_zero_skips_nulls_and_wraps_as_java_does():
    assert run("SUM", [None, 2, None, 5]) == [0, 2, 2, 7]
    assert run("SUM", [2**31 - 1, 1], bits=32) == [2**31 - 1, -2**31]
    assert run("SUM", [1.5, 2.25]) == [1.5, 3.75]
    assert run("SUM", [Decimal("1.10"), Decimal("2.05")]) == [Decimal("1.10"), Decimal("3.15")]


def test_avg_is_zero_before_a_value_and_skips_nulls():
    assert run("AVG", [None, 1, None, 2]) == [0, 1.0, 1.0, 1.5]


def test_min_and_max_ignore_nulls():
    assert run("MIN", [None, 3, 1, None, 2]) == [None, 3, 1, 1, 1]
    assert run("MAX", ["b", None, "c", "a"]) == ["b", "b", "c", "c"]


def test_collect_list_and_set_keep_nulls_in_record_order():
    assert run("COLLECT_LIST", [1, None, 1]) == [[1], [1, None], [1, None, 1]]
    assert run("COLLECT_SET", [2, None, 2, 1, None]) == [[2], [2, None], [2, None], [2, None, 1], [2, None, 1]]
    assert run("COUNT_DISTINCT", [2, None, 2, 1]) == [1, 1, 1, 2]


def test_by_offset_ignores_nulls():
    assert run("LATEST_BY_OFFSET", [None, "x", None, "y"]) == [None, "x", "x", "y"]
    assert run("EARLIEST_BY_OFFSET", [None, "x", None, "y"]) == [None, "x", "x", "x"]


def run_with(name, values, *options):
    """The result after each value, every record carrying the call's literal `options`."""
    acc = accumulator(name, 1 + len(options))
    state, results = acc.initial, []
    for value in values:
        state = acc.add(state, (value, *options))
        results.append(acc.result(state))
    return results


#: ksqlDB's latest-offset-udaf.json and earliest-offset-udaf.json: (call, options, inputs, outputs).
BY_OFFSET_CASES = [
    ("LATEST_BY_OFFSET", (True,), [12, None, 13], [12, 12, 13]),
    ("LATEST_BY_OFFSET", (2, True), [12, None, 13], [[12], [12], [12, 13]]),
    ("LATEST_BY_OFFSET", (False,), [12, None, 13], [12, None, 13]),
    ("LATEST_BY_OFFSET", (2, False), [12, None, 13], [[12], [12, None], [None, 13]]),
    ("LATEST_BY_OFFSET", (2,), [12, None], [[12], [12]]),
    ("LATEST_BY_OFFSET", (2,), [None, None], [[], []]),
    ("LATEST_BY_OFFSET", (2,), [12, 21, 31], [[12], [12, 21], [21, 31]]),
    ("EARLIEST_BY_OFFSET", (True,), [None, 13], [None, 13]),
    ("EARLIEST_BY_OFFSET", (2,), [None, 13], [[], [13]]),
    ("EARLIEST_BY_OFFSET", (False,), [None, 13], [None, None]),
    ("EARLIEST_BY_OFFSET", (2, False), [None, 13], [[None], [None, 13]]),
    ("EARLIEST_BY_OFFSET", (False,), [12, None, 13], [12, 12, 12]),
    ("EARLIEST_BY_OFFSET", (2, False), [12, None, 13], [[12], [12, None], [12, None]]),
    ("EARLIEST_BY_OFFSET", (2,), [12, 21, 31], [[12], [12, 21], [12, 21]]),
    ("EARLIEST_BY_OFFSET", (2,), [None, None], [[], []]),
]


@pytest.mark.parametrize("name, options, values, expected", BY_OFFSET_CASES)
def test_by_offset_with_n_and_ignore_nulls_as_ksqldb(name, options, values, expected):
    assert run_with(name, values, *options) == expected


def test_a_result_never_shares_the_state_it_came_from():
    acc = accumulator("COLLECT_LIST", 1)
    state = acc.add(acc.initial, (1,))
    acc.result(state).append(2)
    assert acc.result(state) == [1] and acc.initial == ([],)


@pytest.mark.parametrize("value,bits,expected", [(2**63, 64, -2**63), (-2**31 - 1, 32, 2**31 - 1), (2**70, None, 2**70)])
def test_wrapped(value, bits, expected):
    assert wrapped(value, bits) == expected


def test_every_accumulator_is_an_aggregate_function():
    assert set(ACCUMULATORS) <= set(SIGNATURES)


def test_topk_keeps_the_k_greatest_non_null_values_greatest_first():
    acc, distinct = accumulator("TOPK", 2), accumulator("TOPKDISTINCT", 2)
    state, kept = acc.initial, distinct.initial
    for value in (3, None, 5, 3, 4):
        state, kept = acc.add(state, (value, 3)), distinct.add(kept, (value, 3))
    assert acc.result(state) == [5, 4, 3] and distinct.result(kept) == [5, 4, 3]
    assert acc.result(acc.add(state, (3, 4))) == [5, 4, 3, 3]


@pytest.mark.parametrize("name,nargs,first,second,args,result", [
    ("COUNT", 0, [(), ()], [()], (), 3),
    ("SUM", 1, [(1,), (2,)], [(None,), (4,)], (0,), 7),
    ("AVG", 1, [(1,), (2,)], [(6,)], (0,), 3),
    ("MIN", 1, [(5,), (2,)], [(3,)], (9,), 2),
    ("MAX", 1, [(5,)], [(None,), (8,)], (1,), 8),
    ("COLLECT_LIST", 1, [(1,), (None,)], [(1,), (3,)], (0,), [1, None, 1, 3]),  # the first session's first
    ("COLLECT_SET", 1, [(2,), (1,)], [(1,), (3,)], (0,), [2, 1, 3]),
    ("COUNT_DISTINCT", 1, [(2,), (1,)], [(1,), (None,)], (0,), 2),
    ("TOPK", 2, [(5, 2), (1, 2)], [(7, 2), (2, 2)], (0, 2), [7, 5]),
    ("TOPKDISTINCT", 2, [(5, 2)], [(5, 2), (4, 2)], (0, 2), [5, 4]),
])
def test_merge_joins_two_sessions_states_as_ksqldb_udafs_merge(name, nargs, first, second, args, result):
    acc = accumulator(name, nargs, 32)

    def fold(rows):
        state = acc.initial
        for row in rows:
            state = acc.add(state, row)
        return state
    assert acc.result(acc.merge(fold(first), fold(second), args)) == result


def test_by_offset_accumulators_do_not_merge_their_states():
    """Which value is latest depends on when each session's records came, which a state does not hold."""
    assert accumulator("LATEST_BY_OFFSET", 1).merge is None and accumulator("EARLIEST_BY_OFFSET", 1).merge is None
