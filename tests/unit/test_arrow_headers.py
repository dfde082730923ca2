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


def test_header_keys_keep_each_listed_keys_last_header_in_record_order():
    hs = [[("a", b"1"), ("b", b"x"), ("a", b"2"), ("c", b"y")],
          [("c", b"z")],
          [],
          [("b", None), ("a", b"3"), ("b", b"w")]]
    column = _headers(hs, 4, HEADERS, keys=("a", "b"))
    assert column.to_pylist() == [
        [{"key": "b", "value": b"x"}, {"key": "a", "value": b"2"}],
        [],
        [],
        [{"key": "a", "value": b"3"}, {"key": "b", "value": b"w"}],
    ]


def test_header_keys_keep_a_null_last_value_and_null_rows():
    hs = [[("a", b"1"), ("a", None)], None, [("a", b"2")]]
    column = _headers(hs, 3, HEADERS, [False, True, False], keys=("a",))
    assert column.to_pylist() == [[{"key": "a", "value": None}], None, [{"key": "a", "value": b"2"}]]


def test_header_keys_with_no_match_anywhere():
    assert _headers([[("x", b"1")], [("y", b"2")]], 2, HEADERS, keys=("a",)).to_pylist() == [[], []]
