"""A micro-batch's rows in record-time order (results.record_order), and the status line saying
which rows the widget shows once some went out of view. No Spark."""

from __future__ import annotations

import pyarrow as pa

from kafkasql_magic.engine.columns import OFFSET, PARTITION, RAW_TIMESTAMP, result_column
from kafkasql_magic.live import LiveModel
from kafkasql_magic.live.render import status_text
from kafkasql_magic.results import record_order


def batch(rows, time_type=pa.timestamp("ms", tz="UTC")):
    """rows: (value, partition, offset, time) in the order Spark delivers them."""
    values, partitions, offsets, times = zip(*rows)
    return pa.table({result_column(0): list(values), PARTITION: pa.array(partitions, pa.int32()),
                     OFFSET: pa.array(offsets, pa.int64()), RAW_TIMESTAMP: pa.array(times, time_type)})


def test_partitions_are_merged_by_record_time_each_keeping_its_offset_order():
    delivered = batch([("a0", 0, 10, 1000), ("a1", 0, 11, 4000), ("a2", 0, 12, 500),  # a2: written late, older time
                       ("b0", 1, 7, 2000), ("b1", 1, 8, 5000), ("c0", 2, 3, 3000), ("c1", 2, 4, 3000)])
    ordered = record_order(delivered).column(result_column(0)).to_pylist()
    assert ordered == ["a0", "b0", "c0", "c1", "a1", "a2", "b1"]


def test_equal_times_go_by_partition_and_rows_without_a_record_stay_as_they_are():
    assert record_order(batch([("b", 1, 0, 5), ("a", 0, 0, 5)], pa.int64())).column(0).to_pylist() == ["a", "b"]
    groups = batch([("g2", None, None, None), ("g1", None, None, None)])  # an aggregation's rows
    assert record_order(groups).column(0).to_pylist() == ["g2", "g1"]


def test_the_status_says_which_rows_the_widget_shows_once_some_went_out_of_view():
    stream = LiveModel(["N"], max_rows=2)
    stream.on_batch(0, [(1,), (2,)])
    assert "rows: 2  " in status_text(stream.snapshot())
    stream.on_batch(1, [(3,)])
    assert "rows: 3 (showing the latest 2 of 3)" in status_text(stream.snapshot())
    table = LiveModel(["K", "V"], key_columns=["K"], max_rows=2)
    table.on_batch(0, [("a", 1), ("a", 2), ("b", 1)])
    assert "showing" not in status_text(table.snapshot())  # every key is on view
    table.on_batch(1, [("c", 1)])
    assert "rows: 4 (showing the 2 most recently updated keys)" in status_text(table.snapshot())
    assert "showing the 2 most recently updated keys" in table.to_html()
