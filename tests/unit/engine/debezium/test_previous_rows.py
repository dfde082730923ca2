"""A key's changes paired with the row it held: the rule the sink's keyed step applies."""

from kafkasql_magic.engine.debezium.rules import pairs


def test_each_change_pairs_with_the_row_before_it_and_the_last_row_is_held():
    assert pairs(None, ["a", "b", None]) == ([(None, "a"), ("a", "b"), ("b", None)], None)
    assert pairs("a", ["b"]) == ([("a", "b")], "b")


def test_a_delete_of_a_row_not_held_pairs_two_nones_and_holds_nothing():
    assert pairs(None, [None]) == ([(None, None)], None)


def test_no_change_keeps_the_held_row():
    assert pairs("a", []) == ([], "a")
