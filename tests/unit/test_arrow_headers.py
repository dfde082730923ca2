"""The headers column: a record whose headers cannot be read is NULL, the others are kept.
(Reading such a record from Kafka is covered by tests/integration/test_faults.py.)"""

from __future__ import annotations

from kafkasql_magic.kafka.arrow_batch import _headers, arrow_schema

HEADERS = arrow_schema().field("headers").type


def test_unreadable_headers_become_null_and_the_rest_stay():
    column = _headers([[("a", b"1")], None, None], 3, HEADERS, [False, True, False])
    assert column.to_pylist() == [[{"key": "a", "value": b"1"}], None, []]


def test_no_headers_at_all_with_one_unreadable():
    assert _headers([None, None], 2, HEADERS, [True, False]).to_pylist() == [None, []]


def test_readable_headers_are_never_null():
    assert _headers([None, [("k", None)]], 2, HEADERS).to_pylist() == [[], [{"key": "k", "value": None}]]
