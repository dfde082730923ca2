"""JSON values decoded in the reader's worker (kafka.json_columns) give exactly the rows and the
processing-log entries of the planner's own decoding, record for record."""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import functions as F

from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.engine import api

GOOD = [json.dumps({"ID": i, "name": f"n{i}", "Amount": i / 4, "n": -i, "ok": i % 2 == 0}).encode() for i in range(40)]
ODD = [b'{"id": "7", "name": "seven"}', b'{"id": 1} x', b"null", b"[1]", b'{"n": 2147483648}', b'\t{"id": 2}',
       b'{"amount": -0}', b'{"amount": NaN}', b'{"id": 3, "id": 4}', b"{'id': 5}", b'{"id": 6}}', b"",
       b'{"id": 1.5}', b'{"id": {"a": 1}}', b'{"id": 8, "Id": 9}', b'{"name": "\xff"}', None, b'{"id": 10} {"id": 11}',
       b'{"name": "\\ud800"}', b'{"ok": "true", "amount": "2.5"}']
QUERY = "SELECT id, name, amount, n, ok FROM wj;"


def _run(session):
    before = session.processing_log()
    frame = session.sql(QUERY).astype(object)
    rows = sorted((tuple(None if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)), key=repr)
    log = session.processing_log().iloc[len(before):]
    return rows, sorted(map(tuple, log[["PARTITION", "OFFSET", "MESSAGE"]].values.tolist()))


def test_worker_decoding_matches_the_planner_record_for_record(session, spark, broker, new_topic, monkeypatch):
    topic = new_topic(3)
    mixed = [v for pair in zip(GOOD, ODD + GOOD) for v in pair]
    records = [(0, v) for v in GOOD] + [(1, v) for v in mixed] + [(2, v) for v in ODD]
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": p} for p, v in records])
    session.sql(f"CREATE STREAM wj (id BIGINT, name STRING, amount DOUBLE, n INT, ok BOOLEAN) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")

    options = {"bootstrap.servers": broker.bootstrap_servers, "topic": topic,
               "jsonValueColumns": json.dumps([["id", "BIGINT"], ["name", "STRING"]])}
    raw = spark.read.format("kafkasql").options(**options).load()
    decoded = {r["partition"]: r["d"] for r in raw.groupBy("partition")
               .agg(F.sum(F.col("__json_decoded").cast("int")).alias("d")).collect()}
    assert decoded[0] == len(GOOD) and 0 < decoded[1] < len(mixed), decoded  # the worker did decode

    in_worker, log_in_worker = _run(session)
    monkeypatch.setitem(session.settings, api.DECODE_IN_READER, "false")
    by_planner, log_by_planner = _run(session)
    assert in_worker == by_planner
    assert log_in_worker == log_by_planner and {p for p, _, _ in log_in_worker} == {1, 2}
    skipped = sum(v is None for _, v in records)  # a stream skips records without a value
    assert len(in_worker) == len(records) - skipped - len(log_in_worker) >= 100  # no record lost (100 good)
    assert sum(row == (3, "n3", 0.75, -3, False) for row in in_worker) == 3  # each good record, once per partition
