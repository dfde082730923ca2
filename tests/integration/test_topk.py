"""TOPK and TOPKDISTINCT as ksqlDB's topk-group-by.json and topk-distinct.json compute them: the k
greatest non-NULL values, greatest first (TOPK keeps repeats, TOPKDISTINCT does not); TOPK with
columns beside its sort column gives structs `sort_col`, `col0`, ..., equal sort values in arrival
order. A CREATE TABLE AS writes them; its sink topic is read back."""

from __future__ import annotations

import json
import struct
import time
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

ROWS = [("zero", 0), ("one", 100), ("two", 99), ("three", None), (None, 100), ("four", 7)]


def test_topk_and_topkdistinct_write_the_greatest_values_first(ksql, broker):
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, out = f"TK_{tag}", f"t-tk-{tag.lower()}", f"TOP_{tag}"
    ksql.sql(f"CREATE STREAM {src} (ID BIGINT KEY, NAME STRING, V INT) WITH (kafka_topic='{topic}', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">q", 0), "value": json.dumps({"NAME": n, "V": v}).encode(), "timestamp": 1000 + i}
        for i, (n, v) in enumerate(ROWS)])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, TOPK(V, 3) AS T, TOPKDISTINCT(V, 3) AS D, "
                     f"TOPK(V, NAME, 3) AS S FROM {src} GROUP BY ID;")
    expected = {"T": [100, 100, 99], "D": [100, 99, 7],
                "S": [{"sort_col": 100, "col0": "one"}, {"sort_col": 100, "col0": None},
                      {"sort_col": 99, "col0": "two"}]}
    latest, deadline = None, time.monotonic() + 120
    try:
        while latest != expected and time.monotonic() < deadline:
            assert query.failure is None, query.failure
            records = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=2,
                                    until_end=False)
            latest = json.loads(records[-1]["value"]) if records else None
    finally:
        ksql.sql(f"TERMINATE {query.id};")
    assert latest == expected
