"""The lookup join's order and output rules (engine/lookup_join/rules.py). No Spark."""

from kafkasql_magic.engine.lookup_join.rules import STREAM, TABLE, joins, processing_order


def test_messages_go_by_record_time_then_a_table_change_first_then_offset():
    messages = [(5, STREAM, 10), (5, TABLE, 3), (2, STREAM, 11), (5, STREAM, 9), (7, TABLE, 1)]
    ordered = sorted(messages, key=lambda m: processing_order(*m))
    assert ordered == [(2, STREAM, 11), (5, TABLE, 3), (5, STREAM, 9), (5, STREAM, 10), (7, TABLE, 1)]


def test_a_record_without_a_time_goes_first():
    assert sorted([(1, STREAM, 0), (None, STREAM, 1)], key=lambda m: processing_order(*m))[0] == (None, STREAM, 1)


def test_an_unmatched_record_makes_a_row_in_a_left_join_only():
    assert joins(True, False) and joins(True, True) and joins(False, True)
    assert not joins(False, False)


# ---- the stateful step, with a state handle of its own (no Spark session) ---------------------
class Handle:
    """What transformWithState hands a processor's init(): value states that keep their value."""

    def getValueState(self, name, schema):
        return Value()


class Value:
    def __init__(self):
        self.value = None

    def get(self):
        return self.value

    def update(self, value):
        self.value = tuple(value)

    def clear(self):
        self.value = None


def message(side, at, order, row=None, tomb=False):
    from pyspark.sql import Row

    return Row(__side=side, __jk="tea", __rt=at, __order=order, __tomb=tomb,
               __l=row if side == STREAM else None, __r=row if side == TABLE else None)


def lookup(keeps_unmatched=False):
    from pyspark.sql import types as T

    from kafkasql_magic.engine.lookup_join.state_spark import TableLookup

    processor = TableLookup(T.StructType([T.StructField("price", T.LongType())]), keeps_unmatched)
    processor.init(Handle())
    return processor


def test_a_stream_record_meets_the_table_row_of_its_time():
    step = lookup()
    out = list(step.handleInputRows(("tea",), iter([
        message(STREAM, 5, 0, {"sale": 1}), message(TABLE, 1, 0, {"price": 2}),
        message(TABLE, 10, 1, {"price": 3}), message(STREAM, 10, 1, {"sale": 2})]), None))
    assert [(r["__l"]["sale"], r["__r"]["price"]) for r in out] == [(1, 2), (2, 3)]  # a change at a tie first
    assert step.rows.get() == ({"price": 3},)
    # the next micro-batch meets the row the last one left; a tombstone removes it
    out = list(step.handleInputRows(("tea",), iter([message(STREAM, 11, 2, {"sale": 3}),
                                                    message(TABLE, 12, 2, tomb=True),
                                                    message(STREAM, 13, 3, {"sale": 4})]), None))
    assert [(r["__l"]["sale"], r["__r"]["price"]) for r in out] == [(3, 3)] and step.rows.get() is None


def test_a_left_join_keeps_a_record_without_a_row_and_a_null_key_touches_no_state():
    step = lookup(keeps_unmatched=True)
    out = list(step.handleInputRows((None,), iter([message(STREAM, 1, 0, {"sale": 1})]), None))
    assert [(r["__l"], r["__r"]) for r in out] == [({"sale": 1}, None)] and step.rows.get() is None
