"""The rules of Materialize's diff joins in keyed state, without Spark: a changelog's record key
moving its row between join keys, and one join key's changes against both inputs' rows."""

from __future__ import annotations

from kafkasql_magic.engine.diff_join.changes import changed_rows, in_order, matched_changes


def test_a_changelog_update_retracts_under_the_old_join_key_and_inserts_under_the_new():
    assert changed_rows(None, ("k1", "a")) == ([(("k1", "a"), 1)], ("k1", "a"))
    assert changed_rows(("k1", "a"), ("k2", "a")) == ([(("k1", "a"), -1), (("k2", "a"), 1)], ("k2", "a"))
    assert changed_rows(("k2", "a"), ("k2", "a")) == ([], ("k2", "a"))  # written again unchanged
    assert changed_rows(("k2", "a"), None) == ([(("k2", "a"), -1)], None)  # a delete
    assert changed_rows(None, None) == ([], None)


def test_changes_keep_each_partitions_offset_order_merged_by_time():
    changes = [(0, 0, 2, 50), (0, 0, 1, 60), (0, 1, 7, 55), (1, 0, 3, 10)]  # side, partition, offset, time
    ordered = in_order(changes, lambda c: c[0], lambda c: c[1], lambda c: c[2], lambda c: c[3])
    # partition 0 of side 0 by offset (its time goes back from 60 to 50), the runs merged by time
    assert ordered == [(1, 0, 3, 10), (0, 1, 7, 55), (0, 0, 1, 60), (0, 0, 2, 50)]


def test_an_inner_join_multiplies_counts():
    held = [{"l1": 2}, {}]
    out = matched_changes(held, [(1, "r1", 1, 5), (0, "l2", 1, 6)], (False, False))
    assert out == {("l1", "r1", 5): 2, ("l2", "r1", 6): 1}
    assert held == [{"l1": 2, "l2": 1}, {"r1": 1}]


def test_a_left_join_retracts_the_null_extended_row_at_the_first_match_and_back_at_the_last():
    held = [{}, {}]
    out = matched_changes(held, [(0, "l1", 1, 1), (1, "r1", 1, 2), (1, "r1", -1, 3)], (True, False))
    assert out == {("l1", None, 1): 1, ("l1", None, 2): -1, ("l1", "r1", 2): 1, ("l1", "r1", 3): -1,
                   ("l1", None, 3): 1}
    assert held == [{"l1": 1}, {}]


def test_a_row_moved_within_one_join_key_nets_out_its_null_extension():
    held = [{"l1": 1}, {"r1": 1}]
    out = matched_changes(held, [(1, "r1", -1, 4), (1, "r2", 1, 4)], (True, False))
    assert {k: v for k, v in out.items() if v} == {("l1", "r1", 4): -1, ("l1", "r2", 4): 1}
