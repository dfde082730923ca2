"""A persistent query resumed from a checkpoint whose state was laid out otherwise is refused
with what changed and where the checkpoint is, instead of resuming on state it cannot meet."""

from __future__ import annotations

import json
import os
import time
import uuid

import kafkasql_magic as ks
from kafkasql_magic.sinks import layout


def test_a_resume_refuses_a_checkpoint_with_another_state_layout(broker, spark, tmp_path, capsys):
    tag = uuid.uuid4().hex[:8].upper()
    service, state = f"layout{tag.lower()}", str(tmp_path / "state")

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service)

    first = connect()
    first.sql(f"CREATE STREAM SRC_{tag} (ID INT KEY, V STRING) WITH (kafka_topic='t-{tag.lower()}', "
              "value_format='JSON', partitions=1);")
    query = first.sql(f"CREATE STREAM OUT_{tag} AS SELECT * FROM SRC_{tag};")
    explained = dict(first.sql(f"EXPLAIN {query.id};").values.tolist())
    recorded = os.path.join(query.checkpoint, layout.FILE)
    deadline = time.monotonic() + 30
    while not os.path.exists(recorded) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(recorded, encoding="utf-8") as handle:
        assert json.load(handle) == {"hash buckets": {}, "batch state": False}  # written at the first start
    first.stop()

    # as if an older version had kept a diff join's state in one group
    layout.record(query.checkpoint, {"hash buckets": {"diff join": 1}, "batch state": False})
    capsys.readouterr()
    second = connect()
    printed = capsys.readouterr().out
    assert query.id not in second.persistent.queries  # not resumed on state it cannot meet
    assert (f"Query {query.id} cannot resume from its checkpoint: the layout of its state changed since the "
            "checkpoint was written (diff join: one group in the checkpoint, no such step now).") in printed
    assert f"delete its checkpoint to start it afresh: {explained['Checkpoint']} (EXPLAIN {query.id} shows it)" \
        in printed
    assert f"OUT_{tag}" in list(second.sql("SHOW STREAMS;").iloc[:, 0])  # the sink stays declared
    second.stop()


def test_a_session_query_refuses_a_checkpoint_of_sessions_kept_per_micro_batch(broker, spark, tmp_path, capsys):
    """SESSION windows once kept their members beside the checkpoint, per micro-batch; their
    sessions are keyed state now, which such a checkpoint does not hold."""
    tag = uuid.uuid4().hex[:8].upper()
    service, state = f"sessions{tag.lower()}", str(tmp_path / "state")

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service)

    first = connect()
    first.sql(f"CREATE STREAM SRC_{tag} (ID INT KEY, V STRING) WITH (kafka_topic='s-{tag.lower()}', "
              "value_format='JSON', partitions=1);")
    query = first.sql(f"CREATE TABLE OUT_{tag} AS SELECT ID, COUNT(*) AS N FROM SRC_{tag} "
                      "WINDOW SESSION (30 SECONDS) GROUP BY ID;")
    recorded = os.path.join(query.checkpoint, layout.FILE)
    deadline = time.monotonic() + 30
    while not os.path.exists(recorded) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(recorded, encoding="utf-8") as handle:
        assert json.load(handle) == {"hash buckets": {"session windows": "open sessions per group key"},
                                     "batch state": False}
    first.stop()

    layout.record(query.checkpoint, {"hash buckets": {}, "batch state": True})  # as the per-batch sessions wrote
    capsys.readouterr()
    second = connect()
    printed = capsys.readouterr().out
    assert query.id not in second.persistent.queries
    assert (f"Query {query.id} cannot resume from its checkpoint: the layout of its state changed since the "
            "checkpoint was written (session windows: no such step in the checkpoint, open sessions per group "
            "key now; state kept per micro-batch: yes in the checkpoint, no now).") in printed
    second.stop()


def test_a_debezium_sink_refuses_a_checkpoint_of_previous_rows_kept_beside_it(broker, spark, tmp_path, capsys):
    """A Debezium sink's previous rows per key were Parquet frames beside the checkpoint; they are
    keyed state now, which such a checkpoint does not hold: resuming would write wrong `before`s."""
    from kafkasql_magic.kafka.producer import produce

    tag = uuid.uuid4().hex[:8].lower()
    service, state, topic = f"dbzlayout{tag}", str(tmp_path / "state"), f"d-{tag}"
    produce(broker.bootstrap_servers, topic, [{"key": b"k1", "value": b"a"}])

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service)

    first = connect()
    query = first.sql(f"CREATE SOURCE src FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                      f"INCLUDE KEY AS id ENVELOPE UPSERT; CREATE SINK snk FROM src INTO KAFKA BROKER "
                      f"'{broker.bootstrap_servers}' (TOPIC 'out-{tag}') FORMAT JSON ENVELOPE DEBEZIUM",
                      dialect="materialize")
    recorded = os.path.join(query.checkpoint, layout.FILE)
    deadline = time.monotonic() + 30
    while not os.path.exists(recorded) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(recorded, encoding="utf-8") as handle:
        assert json.load(handle) == {"hash buckets": {"sink's previous rows": "last row per key in keyed state"},
                                     "batch state": False}
    first.stop()

    layout.record(query.checkpoint, {"hash buckets": {}, "batch state": False})  # as the Parquet frames' sinks wrote
    capsys.readouterr()
    second = connect()
    printed = capsys.readouterr().out
    assert query.id not in second.persistent.queries
    assert (f"Query {query.id} cannot resume from its checkpoint: the layout of its state changed since the "
            "checkpoint was written (sink's previous rows: no such step in the checkpoint, last row per key in "
            "keyed state now).") in printed
    second.stop()
