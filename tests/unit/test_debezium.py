"""ENVELOPE DEBEZIUM's reference semantics: upserts of `after`, deletes retracted, the checks."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects.debezium import (
    INCLUDE_KEY_MESSAGE, KEY_FORMAT_MESSAGE, after_fields, changes, check_source, json_event, new_row, replay,
)
from kafkasql_magic.errors import StatementError


def event(before, after, op):
    return {"before": before, "after": after, "op": op}


ALICE = {"id": 1, "name": "alice"}
ALICE2 = {"id": 1, "name": "alice b."}
BOB = {"id": 2, "name": "bob"}


def test_create_update_delete_and_tombstone():
    state = {}
    assert changes(state, 1, event(None, ALICE, "c")) == [(ALICE, +1)]
    assert changes(state, 2, event(None, BOB, "r")) == [(BOB, +1)]  # snapshot read
    assert changes(state, 1, event(ALICE, ALICE2, "u")) == [(ALICE, -1), (ALICE2, +1)]
    assert changes(state, 1, event(ALICE2, None, "d")) == [(ALICE2, -1)]
    assert changes(state, 1, None) == []  # the tombstone after a delete
    assert state == {2: BOB}


def test_after_decides_not_before():
    # a `before` that does not match what the table holds changes nothing: the key decides
    state = {1: ALICE}
    assert changes(state, 1, event(BOB, ALICE2, "u")) == [(ALICE, -1), (ALICE2, +1)]
    assert changes(state, 1, event(ALICE, ALICE2, "u")) == []  # the same row again


def test_a_tombstone_alone_deletes_the_key():
    assert replay([(1, event(None, ALICE, "c")), (1, None)]) == {}


def test_replay_is_the_last_after_per_key():
    records = [(1, event(None, ALICE, "c")), (2, event(None, BOB, "c")), (1, event(ALICE, ALICE2, "u")),
               (2, event(BOB, None, "d")), (3, event(None, {"id": 3, "name": "c"}, "c"))]
    assert replay(records) == {1: ALICE2, 3: {"id": 3, "name": "c"}}
    assert new_row(None) is None and new_row(event(None, BOB, "c")) == BOB


def test_include_key_is_refused_with_materializes_message():
    with pytest.raises(StatementError) as info:
        check_source(["KEY", "PARTITION"], has_key_format=True)
    assert str(info.value) == INCLUDE_KEY_MESSAGE
    assert INCLUDE_KEY_MESSAGE == ("Cannot use INCLUDE KEY with ENVELOPE DEBEZIUM: "
                                   "Debezium values include all keys.")
    with pytest.raises(StatementError, match=KEY_FORMAT_MESSAGE):
        check_source(["PARTITION"], has_key_format=False)
    check_source(["PARTITION", "OFFSET"], has_key_format=True)


def test_the_columns_are_the_fields_of_after():
    assert after_fields([("before", "R"), ("after", "R2"), ("op", "S")]) == "R2"
    assert after_fields([("BEFORE", "R"), ("After", "R2")]) == "R2"
    with pytest.raises(StatementError, match="fields 'before' and 'after'; found: id, name"):
        after_fields([("id", "I"), ("name", "S")])


def test_json_events_with_and_without_the_schema_wrapper():
    change = {"before": None, "after": {"id": 1}, "op": "c"}
    assert json_event(change) == change
    assert json_event({"schema": {"type": "struct"}, "payload": change}) == change
    assert json_event(None) is None  # a tombstone
    assert new_row(json_event({"before": {"id": 1}, "after": None, "op": "d"})) is None
    with pytest.raises(StatementError, match="^Debezium change event has neither a 'before' nor an 'after' row$"):
        json_event({"before": None, "after": None, "op": "c"})
    with pytest.raises(StatementError, match='^unsupported Debezium operation "t" '):
        json_event({"before": None, "after": {"id": 1}, "op": "t"})
