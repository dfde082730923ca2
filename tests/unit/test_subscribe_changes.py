"""Materialize's SUBSCRIBE output without Spark: which diffs a query's rows become (analysis),
its WITH options, and the driver's diffs per micro-batch (snapshot, replaced rows,
consolidation)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkasql_magic.catalog import ViewDef
from kafkasql_magic.diffs import ChangeTracker, KeyedEnvelope, snapshot_read
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.subscribe.last_row import replaced
from kafkasql_magic.engine.subscribe.rules import (AGGREGATE, APPEND, CHANGELOG, JOIN, emits_snapshot,
                                                      subscribed)
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.sql.render_statements import render_statement

from test_analysis import catalog


def subscription(text: str, cat=None):
    stmt = parse_statement(text, dialect="materialize")
    return subscribed(analyse(replace(stmt, emit_changes=True), cat or catalog(), "materialize"))


@pytest.mark.parametrize("text, changes", [
    ("SELECT text FROM events WHERE text <> 'x'", APPEND),
    ("SELECT o.item FROM orders o JOIN clicks c ON o.id = c.id JOIN events e ON o.item = e.text", APPEND),
    ("SELECT item, price FROM items", CHANGELOG),
    ("SELECT price FROM (SELECT item, price FROM items WHERE price > 1) AS cheap", CHANGELOG),
    ("SELECT item, count(*) AS n FROM orders GROUP BY item", AGGREGATE),
    ("SELECT count(*) AS n FROM items", AGGREGATE),
    ("SELECT o.item, e.text FROM orders o LEFT JOIN events e ON o.item = e.text", JOIN),
])
def test_every_shape_has_its_diffs(text, changes):
    plan = subscription(text)
    assert plan.changes == changes
    assert plan.names[:2] == ["mz_timestamp", "mz_diff"] and len(plan.names) == len(plan.outputs) + 2


def test_a_snapshot_has_no_diff_columns():
    plan = analyse(parse_statement("SELECT item FROM orders", dialect="materialize"), catalog(), "materialize")
    assert plan.changes is None and plan.names == ["item"]


def test_a_view_over_a_changelog_must_select_its_key():
    cat = catalog()
    cat.add(ViewDef("item_prices", parse_statement("SELECT price FROM items", dialect="materialize"), dialect="materialize"))
    with pytest.raises(StatementError, match=r"^SUBSCRIBE over 'item_prices' needs it to select the key of the changelog "
                                             r"it reads \(ITEM\): its rows are replaced by key\.$"):
        subscription("SELECT price FROM item_prices", cat)


def test_a_query_over_an_aggregating_subquery_is_refused():
    with pytest.raises(StatementError, match=r"^SUBSCRIBE over a query of 'c' is not supported yet: it aggregates"):
        subscription("SELECT n FROM (SELECT item, count(*) AS n FROM orders GROUP BY item) AS c")


def test_with_options():
    def options(text):
        return emits_snapshot(parse_statement(text, dialect="materialize"))

    assert options("SUBSCRIBE events") is True
    assert options("SUBSCRIBE events WITH (SNAPSHOT = false)") is False
    assert options("SUBSCRIBE (SELECT text FROM events) WITH (SNAPSHOT)") is True
    assert options("SUBSCRIBE events WITH (PROGRESS = false, SNAPSHOT = false)") is False
    with pytest.raises(StatementError, match=r'^line 1:24: Expected one of PROGRESS or SNAPSHOT, found identifier "fast"$'):
        options("SUBSCRIBE events WITH (fast)")
    with pytest.raises(StatementError, match=r"^line 1:41: SNAPSHOT specified more than once$"):
        options("SUBSCRIBE events WITH (SNAPSHOT = true, SNAPSHOT = false)")
    with pytest.raises(StatementError, match=r"SUBSCRIBE WITH \(PROGRESS\) is not supported yet"):
        options("SUBSCRIBE events WITH (PROGRESS)")
    stmt = parse_statement("subscribe to events with (snapshot = false)", dialect="materialize")
    assert render_statement(stmt, "materialize") == "SUBSCRIBE events WITH (SNAPSHOT = false)"


def test_append_only_rows_are_consolidated_per_time():
    tracker = ChangeTracker()
    rows = [(10, 1, "a", None), (10, 1, "a", None), (11, 1, "a", None), (11, 1, "b", None)]
    assert tracker.batch(rows) == [(10, 2, "a"), (11, 1, "a"), (11, 1, "b")]


def test_the_snapshot_is_one_time_and_its_history_nets_out():
    tracker = ChangeTracker(snapshot_ends=[{0: 5}])
    # a changelog: k1 written twice, k2 written then deleted, k3 once
    rows = [(1, 1, "k1", "a", "k1"), (2, 1, "k2", "b", "k2"), (3, 1, "k1", "c", "k1"), (4, -1, "k2", None, "k2"),
            (5, 1, "k3", "d", "k3")]
    assert sorted(tracker.batch(rows)) == [(5, 1, "k1", "c"), (5, 1, "k3", "d")]
    # after the snapshot: an update retracts the key's row, a delete retracts it, at their own times
    later = [(9, 1, "k1", "e", "k1"), (10, -1, "k3", None, "k3"), (11, -1, "k9", None, "k9")]
    assert tracker.batch(later) == [(9, -1, "k1", "c"), (9, 1, "k1", "e"), (10, -1, "k3", "d")]


def test_without_the_snapshot_the_state_is_kept_and_only_changes_show():
    tracker = ChangeTracker(snapshot_ends=[{0: 2}], emit_snapshot=False)
    assert tracker.batch([(1, 1, "red", 2, "[\"red\"]"), (1, 1, "blue", 1, "[\"blue\"]")]) == []
    # an aggregation's group: its old row out, the new one in; a row that did not change shows nothing
    changed = tracker.batch([(7, 1, "red", 3, "[\"red\"]"), (7, 1, "blue", 1, "[\"blue\"]")])
    assert changed == [(7, -1, "red", 2), (7, 1, "red", 3)]


def test_a_first_batch_is_no_snapshot_when_the_inputs_were_empty():
    tracker = ChangeTracker(emit_snapshot=False)
    assert tracker.batch([(3, 1, "x", None), (4, 1, "y", None)]) == [(3, 1, "x"), (4, 1, "y")]


def test_structured_values_are_rows_too():
    tracker = ChangeTracker()
    rows = [(1, 1, {"a": [1, 2]}, "k"), (2, 1, {"a": [1, 2]}, "k"), (3, 1, {"a": [3]}, "k")]
    # written again unchanged: nothing changed; then replaced
    assert tracker.batch(rows) == [(1, 1, {"a": [1, 2]}), (3, -1, {"a": [1, 2]}), (3, 1, {"a": [3]})]
    assert tracker.batch([(4, 1, [{"m": {"x": 1}}], None)] * 2) == [(4, 2, [{"m": {"x": 1}}])]


def test_envelope_upsert_gives_one_row_per_key_and_time():
    envelope = KeyedEnvelope(["v", "k"], "UPSERT", ("K",))
    assert envelope.names == ["mz_timestamp", "mz_state", "k", "v"]  # the key columns first
    tracker = ChangeTracker(snapshot_ends=[{0: 2}], envelope=envelope)
    assert tracker.names(["mz_timestamp", "mz_diff", "v", "k"]) == envelope.names
    rows = [(1, 1, "a", "k1", "k1"), (2, 1, "b", "k2", "k2"), (3, 1, "c", "k1", "k1")]
    assert sorted(tracker.batch(rows)) == [(3, "upsert", "k1", "c"), (3, "upsert", "k2", "b")]
    later = [(5, 1, "d", "k1", "k1"), (6, -1, None, "k2", "k2")]
    assert tracker.batch(later) == [(5, "upsert", "k1", "d"), (6, "delete", "k2", None)]
    # two rows for one key at one time: Materialize's key_violation
    appended = ChangeTracker(envelope=KeyedEnvelope(["v", "k"], "UPSERT", ("k",)))
    assert appended.batch([(7, 1, "x", "k9", None), (7, 1, "y", "k9", None)]) == [(7, "key_violation", "k9", None)]


def test_envelope_upsert_names_existing_columns():
    with pytest.raises(StatementError, match='^column "nope" does not exist$'):
        KeyedEnvelope(["v", "k"], "UPSERT", ("nope",))
    stmt = parse_statement("SUBSCRIBE s ENVELOPE UPSERT (KEY (k, \"V\")) WITH (SNAPSHOT = false)", dialect="materialize")
    assert stmt.envelope == ("UPSERT", ("k", "V"))
    assert render_statement(stmt, "materialize") == 'SUBSCRIBE s ENVELOPE UPSERT (KEY (k, "V")) WITH (SNAPSHOT = false)'


def test_envelope_debezium_pairs_each_keys_old_and_new_row():
    envelope = KeyedEnvelope(["k", "v", "w"], "DEBEZIUM", ("k",))
    assert envelope.names == ["mz_timestamp", "mz_state", "k", "before_v", "before_w", "after_v", "after_w"]
    tracker = ChangeTracker(envelope=envelope)
    rows = [(1, 1, "k1", "a", 1, "k1"), (2, 1, "k1", "b", 2, "k1"), (3, -1, "k1", None, None, "k1")]
    assert tracker.batch(rows) == [(1, "insert", "k1", None, None, "a", 1), (2, "upsert", "k1", "a", 1, "b", 2),
                                   (3, "delete", "k1", "b", 2, None, None)]
    assert tracker.batch([(4, 2, "k2", "x", 0, None)]) == [(4, "key_violation", "k2", None, None, None, None)]
    stmt = parse_statement("SUBSCRIBE s ENVELOPE DEBEZIUM (KEY (k))", dialect="materialize")
    assert stmt.envelope == ("DEBEZIUM", ("k",))
    assert render_statement(stmt, "materialize") == "SUBSCRIBE s ENVELOPE DEBEZIUM (KEY (k))"


def test_the_snapshot_is_held_until_every_offset_present_at_start_is_read():
    # two sources; the snapshot ends at offset 4 of partition 0 and 2 of partition 1, and 3 of the other's 0
    tracker = ChangeTracker(snapshot_ends=[{0: 4, 1: 2}, {0: 3}])
    assert tracker.batch([(1, 1, "a", None), (2, 1, "b", None)], read=[{0: 2, 1: 2}, {0: 3}]) == []
    # the next bounded batch: a row retracted again, the rest still held
    assert tracker.batch([(3, -1, "a", None), (4, 1, "c", None)], read=[{0: 3, 1: 2}, {0: 3}]) == []
    # the last one reads the offsets present at start: everything at one time, the newest, consolidated
    assert sorted(tracker.batch([(5, 1, "d", None)], read=[{0: 4, 1: 2}, {0: 3}])) == [
        (5, 1, "b"), (5, 1, "c"), (5, 1, "d")]
    assert tracker.batch([(6, 1, "e", None)], read=[{0: 5, 1: 2}, {0: 3}]) == [(6, 1, "e")]


def test_a_snapshot_left_out_is_still_read_whole_before_changes_show():
    tracker = ChangeTracker(snapshot_ends=[{0: 3}], emit_snapshot=False)
    assert tracker.batch([(1, 1, "a", None)], read=[{0: 1}]) == []
    assert tracker.batch([(2, 1, "b", None)], read=[{0: 3}]) == []
    assert tracker.batch([(3, 1, "c", None)], read=[{0: 4}]) == [(3, 1, "c")]


def test_snapshot_read_compares_each_source_with_its_own_ends():
    assert snapshot_read([{0: 3}, {}], [{0: 3}, {0: 0}])
    assert not snapshot_read([{0: 3}, {1: 1}], [{0: 9}, {0: 9}])  # partition 1 of the second: not read
    assert not snapshot_read([{0: 3}, {0: 1}], [{0: 3}])  # a source without offsets yet


def test_a_changelog_key_change_retracts_what_the_key_held():
    assert replaced(None, 1, ("k", "a")) == ([(1, ("k", "a"))], ("k", "a"))
    assert replaced(("k", "a"), 1, ("k", "b")) == ([(-1, ("k", "a")), (1, ("k", "b"))], ("k", "b"))
    assert replaced(("k", "b"), 1, ("k", "b")) == ([], ("k", "b"))  # written again unchanged: nothing
    assert replaced(("k", "b"), -1, ("k", None)) == ([(-1, ("k", "b"))], None)  # a delete
    assert replaced(None, -1, ("k", None)) == ([], None)  # a delete of a key that held nothing
