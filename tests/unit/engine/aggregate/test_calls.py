"""The aggregate functions' calls (engine/aggregate/calls.py): which the analysis accepts, with
ksqlDB's messages for the others; every function the build computes has one."""

import pytest

from kafkasql_magic.engine.aggregate.calls import SIGNATURES, is_aggregate, lookup
from kafkasql_magic.errors import StatementError


def test_count_takes_a_star_no_argument_or_one():
    assert lookup("COUNT", 0, star=True) == lookup("COUNT", 0, star=False) == lookup("COUNT", 1, star=False)


def test_a_star_is_refused_by_the_others():
    with pytest.raises(StatementError, match=r"^Function 'SUM' does not accept '\*'\.$"):
        lookup("SUM", 0, star=True)


def test_a_wrong_number_of_arguments_is_refused_with_ksqldbs_message():
    with pytest.raises(StatementError, match=r"^Function 'SUM' does not accept 2 argument\(s\)\.$"):
        lookup("SUM", 2, star=False)
    with pytest.raises(StatementError, match=r"^Function 'STRING_AGG' does not accept 1 argument\(s\)\.$"):
        lookup("STRING_AGG", 1, star=False)


def test_topk_takes_columns_beside_its_sort_column_and_topkdistinct_does_not():
    assert lookup("TOPK", 4, star=False).variadic
    with pytest.raises(StatementError, match="does not accept 3 argument"):
        lookup("TOPKDISTINCT", 3, star=False)


def test_by_offset_takes_its_value_then_n_and_ignore_nulls():
    for nargs in (1, 2, 3):
        lookup("LATEST_BY_OFFSET", nargs, star=False)
    with pytest.raises(StatementError, match=r"^Function 'EARLIEST_BY_OFFSET' does not accept 4 argument\(s\)\.$"):
        lookup("EARLIEST_BY_OFFSET", 4, star=False)


def test_only_the_table_s_names_are_aggregates():
    assert is_aggregate("LATEST_BY_OFFSET") and not is_aggregate("ABS")


def test_every_aggregate_call_has_its_builder_and_no_builder_lacks_a_call():
    functions = pytest.importorskip("kafkasql_magic.engine.aggregate.functions_spark", reason="builders need pyspark")
    assert set(functions.AGGREGATES) == set(SIGNATURES)
