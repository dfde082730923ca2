"""A persistent query's state layout beside its checkpoint: what it records, what a resume
refuses, and how a checkpoint from before the layout file is read. No Spark session."""

from __future__ import annotations

import json

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sinks import layout
from kafkasql_magic.sql import parse_statement

from test_analysis import SETTINGS, catalog
from test_diff_joins import subscribed


def tables() -> Catalog:
    cat = Catalog()
    for create in ("CREATE TABLE a (id INT PRIMARY KEY, x STRING, b_id INT) WITH (kafka_topic='a', format='JSON');",
                   "CREATE TABLE b (id INT PRIMARY KEY, y STRING) WITH (kafka_topic='b', format='JSON');",
                   "CREATE TABLE c (id INT PRIMARY KEY, z STRING) WITH (kafka_topic='c', format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


def both(plan, batch_store=False):
    return layout.signature(plan, batch_store), layout.signature(plan, batch_store, legacy=True)


def test_a_diff_join_is_keyed_now_and_kept_hash_buckets_or_one_group_before():
    keyed = {"hash buckets": {"diff join": "keyed state per record key and join key"}, "batch state": False}
    now, before = both(subscribed("SELECT o.qty, i.price FROM orders o JOIN items i ON o.item = i.item"))
    assert now == keyed and before == {"hash buckets": {"diff join": 1}, "batch state": False}  # a changelog input
    now, before = both(subscribed("SELECT o.item FROM orders o FULL JOIN events e ON o.item = e.text"))
    assert now == keyed and before == {"hash buckets": {"diff join": 64}, "batch state": False}  # append-only
    assert layout.differences(before, now) == [
        "diff join: 64 hash buckets in the checkpoint, keyed state per record key and join key now"]


def test_table_joins_and_batch_state_are_part_of_the_layout():
    def plan(text):
        return subscribed(text, "ksql", tables())

    primary = layout.signature(plan("SELECT a.id, x, y FROM a JOIN b ON a.id = b.id EMIT CHANGES;"), False)
    foreign = layout.signature(plan("SELECT a.id, x, y FROM a JOIN b ON a.b_id = b.id EMIT CHANGES;"), False)
    assert primary["hash buckets"] == {"table join": 64}
    assert foreign["hash buckets"] == {"table join": "left keys in 64 hash buckets, then by foreign key, then each "
                                                     "left key's results in order"}
    # a checkpoint of the two steps without the third, which puts each left key's results in order
    assert layout.differences({"hash buckets": {"table join": 64}, "batch state": False}, foreign) == [
        "table join: 64 hash buckets in the checkpoint, left keys in 64 hash buckets, then by foreign key, then "
        "each left key's results in order now"]
    chain = layout.signature(plan("SELECT a.id, x, y, z FROM a JOIN b ON a.b_id = b.id JOIN c ON a.id = c.id "
                                  "EMIT CHANGES;"), False)
    assert chain["hash buckets"] == {"table join": "left keys in 64 hash buckets, then by foreign key, then each "
                                                   "left key's results in order, then with the later tables by left "
                                                   "key in 64 hash buckets"}
    # a chain's checkpoint from when it ran in one group is refused
    assert layout.differences({"hash buckets": {"table join": 1}, "batch state": False}, chain) == [
        "table join: one group in the checkpoint, left keys in 64 hash buckets, then by foreign key, then each left "
        "key's results in order, then with the later tables by left key in 64 hash buckets now"]
    # a checkpoint from before the layout file held the tables' rows as JSON in 256 buckets, or one group
    old = [layout.signature(plan(f"SELECT a.id, x, y FROM a JOIN b ON {on} EMIT CHANGES;"), False, legacy=True)
           for on in ("a.id = b.id", "a.b_id = b.id")]
    assert [o["hash buckets"] for o in old] == [{"table join": 256}, {"table join": 1}]
    plain = subscribed("SELECT * FROM orders EMIT CHANGES;", "ksql", catalog())
    assert layout.signature(plain, True) == {"hash buckets": {}, "batch state": True}


def test_a_new_checkpoint_records_its_layout_and_the_same_layout_resumes(tmp_path):
    checkpoint = str(tmp_path / "CSAS_OUT_1")
    current = {"hash buckets": {"diff join": 64}, "batch state": False}
    layout.check_resume("CSAS_OUT_1", checkpoint, current, legacy={"hash buckets": {}, "batch state": False})
    assert json.loads((tmp_path / "CSAS_OUT_1" / layout.FILE).read_text()) == current
    layout.check_resume("CSAS_OUT_1", checkpoint, current, legacy={"hash buckets": {}, "batch state": False})


def test_a_resume_refuses_a_checkpoint_laid_out_otherwise(tmp_path):
    checkpoint = tmp_path / "SINK_S_3"
    layout.record(str(checkpoint), {"hash buckets": {"diff join": 1}, "batch state": False})
    current = {"hash buckets": {"diff join": 64}, "batch state": True}
    with pytest.raises(StatementError) as refused:
        layout.check_resume("SINK_S_3", str(checkpoint), current, legacy=current)
    assert str(refused.value) == (
        "Query SINK_S_3 cannot resume from its checkpoint: the layout of its state changed since the checkpoint "
        "was written (diff join: one group in the checkpoint, 64 hash buckets now; state kept per micro-batch: "
        "no in the checkpoint, yes now). Resuming would join or aggregate new records against state they "
        "cannot meet, and write wrong results. Re-create the query (TERMINATE it, then run its statement "
        f"again), or delete its checkpoint to start it afresh: {checkpoint} (EXPLAIN SINK_S_3 shows it).")
    # the stored layout is kept: the refusal repeats until the user acts
    assert json.loads((checkpoint / layout.FILE).read_text())["hash buckets"] == {"diff join": 1}


def test_a_checkpoint_from_before_the_file_is_read_with_the_old_layout(tmp_path):
    checkpoint = tmp_path / "SINK_S_1"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1")
    current = {"hash buckets": {"diff join": 64}, "batch state": False}
    old = {"hash buckets": {"diff join": 1}, "batch state": False}
    with pytest.raises(StatementError, match="diff join: one group in the checkpoint, 64 hash buckets now"):
        layout.check_resume("SINK_S_1", str(checkpoint), current, legacy=old)
    assert not (checkpoint / layout.FILE).exists()
    layout.check_resume("SINK_S_1", str(checkpoint), current, legacy=current)  # unchanged: resumes, recorded
    assert json.loads((checkpoint / layout.FILE).read_text()) == current
    # a checkpoint without offsets holds no state yet: it records the current layout
    empty = tmp_path / "SINK_S_2"
    empty.mkdir()
    layout.check_resume("SINK_S_2", str(empty), current, legacy=old)
    assert json.loads((empty / layout.FILE).read_text()) == current


def test_sparks_own_state_refusals_are_recognised():
    spark = Exception("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing "
                      "state value schema.")
    assert layout.spark_mismatch(spark) == "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"
    assert layout.spark_mismatch(Exception("Python worker failed to connect back")) is None


def test_session_windows_keep_open_sessions_per_key_now_and_members_per_micro_batch_before():
    from test_analysis import plan_of

    plan = plan_of("SELECT item, COUNT(*) FROM orders WINDOW SESSION (30 SECONDS) GROUP BY item EMIT CHANGES;")
    now, before = both(plan)
    assert now == {"hash buckets": {"session windows": "open sessions per group key"}, "batch state": False}
    assert before == {"hash buckets": {}, "batch state": True}  # what such a checkpoint recorded, too
    assert layout.differences(before, now) == [
        "session windows: no such step in the checkpoint, open sessions per group key now",
        "state kept per micro-batch: yes in the checkpoint, no now"]
    tumbling = plan_of("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 30 SECONDS) GROUP BY item "
                       "EMIT CHANGES;")
    assert both(tumbling) == ({"hash buckets": {}, "batch state": False},) * 2


def test_a_stream_stream_join_keyed_by_join_key_refuses_the_checkpoint_of_sparks_own_join():
    # before, Spark's own stream-stream join (watermarked on both sides) recorded no step
    plan = subscribed("SELECT o.item, c.url FROM orders o JOIN clicks c WITHIN 1 HOUR ON o.id = c.id EMIT CHANGES;",
                      "ksql", catalog())
    now, before = both(plan)
    assert now == {"hash buckets": {"stream-stream join": "each side's records per join key, by each side's stream "
                                                          "time"}, "batch state": False}
    assert before == {"hash buckets": {}, "batch state": False}
    assert layout.differences(before, now) == [
        "stream-stream join: no such step in the checkpoint, each side's records per join key, by each side's "
        "stream time now"]
