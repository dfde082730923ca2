"""Which partitions and offsets a WHERE clause lets the source skip (no Spark)."""

import pytest

from kafkasql_magic.engine.analysis.seek import Seek, seek_of
from kafkasql_magic.sql import parse_statement


def seek(where):
    return seek_of(parse_statement(f"SELECT * FROM s WHERE {where} EMIT CHANGES;").where)


@pytest.mark.parametrize("where, expected", [
    ("ROWPARTITION = 0 AND ROWOFFSET = 42", Seek(frozenset({0}), 42, 43)),
    ("ROWPARTITION IN (1, 3) AND ROWOFFSET BETWEEN 10 AND 20", Seek(frozenset({1, 3}), 10, 21)),
    ("ROWOFFSET >= 5 AND ROWOFFSET < 9", Seek(None, 5, 9)),
    ("ROWOFFSET > 5 AND 9 >= ROWOFFSET", Seek(None, 6, 10)),
    ("ROWOFFSET IN (7, 3, 5)", Seek(None, 3, 8)),
    ("ROWOFFSET <= 3", Seek(None, None, 4)),
    ("ROWPARTITION = 2", Seek(frozenset({2}))),
    ("ROWPARTITION IN (1, 2) AND ROWPARTITION = 2", Seek(frozenset({2}))),
    ("ROWTIME >= 1700000000000 AND v > 1", Seek(rowtime_from=1700000000000)),
    ("ROWTIME > 99", Seek(rowtime_from=100)),
    ("v = 1 AND ROWOFFSET > 2 AND ROWOFFSET > 5", Seek(None, 6, None)),
])
def test_bounds_from_conjuncts(where, expected):
    assert seek(where) == expected


@pytest.mark.parametrize("where", [
    "ROWPARTITION = 0 OR ROWOFFSET = 42",
    "ROWOFFSET + 1 = 42",
    "ROWOFFSET NOT IN (1, 2)",
    "ROWOFFSET NOT BETWEEN 1 AND 2",
    "ROWPARTITION > 1",
    "ROWTIME < 5",
    "v = 1",
])
def test_what_does_not_narrow(where):
    assert not seek(where).narrows


def test_contradictions_read_nothing_and_describe_says_what_is_read():
    assert seek("ROWOFFSET > 5 AND ROWOFFSET < 3").empty
    assert seek("ROWPARTITION = 1 AND ROWPARTITION = 2").empty
    assert seek("ROWPARTITION = 0 AND ROWOFFSET = 42").describe() == "partitions 0, from offset 42 to offset 42 inclusive"
    assert seek("ROWOFFSET >= 3").describe() == "all partitions, from offset 3 to no end (follows new records)"
