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
    """What transformWithStateInPandas hands a processor's init(): map states that keep their entries."""

    def getMapState(self, name, key_schema, value_schema):
        return Entries()


class Entries:
    def __init__(self):
        self.entries = {}

    def getValue(self, key):
        return self.entries.get(key)

    def updateValue(self, key, value):
        self.entries[key] = tuple(value)

    def removeKey(self, key):
        self.entries.pop(key, None)


def messages(*rows):
    """(side, key, time, offset, sale, price, tombstone) -> the step's input frame."""
    import pandas as pd

    return iter([pd.DataFrame([{"m_side": side, "m_jk": key, "m_rt": at, "m_order": order, "m_tomb": tomb,
                                "l0": sale if side == STREAM else None, "r0": price if side == TABLE else None}
                               for side, key, at, order, sale, price, tomb in rows])])


def lookup(keeps_unmatched=False):
    from pyspark.sql import types as T

    from kafkasql_magic.engine.lookup_join.state_spark import TableLookup

    processor = TableLookup(T.StringType(), T.StructType([T.StructField("r0", T.LongType())]), ["l0"], ["r0"],
                            keeps_unmatched)
    processor.init(Handle())
    return processor


def joined(step, *rows):
    out = list(step.handleInputRows((7,), messages(*rows), None))[0]
    return [tuple(None if v != v else v for v in r) for r in out.astype(object).itertuples(index=False)]


def test_a_stream_record_meets_the_table_row_of_its_time():
    step = lookup()
    assert joined(step, (STREAM, "tea", 5, 0, 1, None, False), (TABLE, "tea", 1, 0, None, 2, False),
                  (TABLE, "tea", 10, 1, None, 3, False), (STREAM, "tea", 10, 1, 2, None, False),
                  (STREAM, "cake", 10, 2, 9, None, False)) == [(1, 2), (2, 3)]  # a change at a tie first
    assert step.rows.entries == {("tea",): (3,)}
    # the next micro-batch meets the row the last one left; a tombstone removes it
    assert joined(step, (STREAM, "tea", 11, 2, 3, None, False), (TABLE, "tea", 12, 2, None, None, True),
                  (STREAM, "tea", 13, 3, 4, None, False)) == [(3, 3)]
    assert step.rows.entries == {}


def test_a_left_join_keeps_a_record_without_a_row_and_a_null_key_touches_no_state():
    step = lookup(keeps_unmatched=True)
    assert joined(step, (STREAM, None, 1, 0, 1, None, False), (STREAM, "tea", 2, 1, 2, None, False),
                  (TABLE, "tea", 3, 0, None, 5, False), (STREAM, "tea", 4, 2, 3, None, False)) == [
        (1, None), (2, None), (3, 5)]
    assert step.rows.entries == {("tea",): (5,)}
