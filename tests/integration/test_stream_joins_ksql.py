"""Stream-stream joins of persistent queries record by record, against ksqlDB's query-validation
tests (`joins.json`). The sink topic is read back with confluent-kafka."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

KEY = struct.Struct(">q")  # BIGINT keys, as ksqlDB's tests declare them


def streams(ksql, broker, columns: tuple[str, str]) -> tuple[str, str, str]:
    """Two streams `L_<tag>` and `R_<tag>` (key `ID BIGINT`, then `columns`, JSON, one partition
    each, topics named as the streams) and a fresh sink name."""
    tag = uuid.uuid4().hex[:8].upper()
    for side, values in zip("LR", columns):
        ksql.sql(f"CREATE STREAM {side}_{tag} (ID BIGINT KEY, {values}) WITH (kafka_topic='{side}_{tag}', "
                 "value_format='JSON', partitions=1);")
    return f"L_{tag}", f"R_{tag}", f"J_{tag}"


def send(broker, topic: str, records: list[tuple]) -> None:
    """(key, value, time) records to `topic`, in order. confluent-kafka (librdkafka) stamps a
    record given time 0 with the current time: those go with kafka-python, which keeps 0."""
    for k, v, ts in records:
        if ts:
            produce(broker.bootstrap_servers, topic, [{"key": KEY.pack(k), "value": json.dumps(v).encode(),
                                                       "timestamp": ts}])
            continue
        kafka = pytest.importorskip("kafka", reason="kafka-python writes records at time 0")
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        try:
            producer.send(topic, key=KEY.pack(k), value=json.dumps(v).encode(), timestamp_ms=0).get(timeout=30)
        finally:
            producer.close()


def written(broker, query, sink: str, count: int, settle: float = 10) -> list[tuple]:
    """The sink's records as (key, value, time) once `count` were written and `settle` seconds
    passed without more."""
    assert query.wait_for_records(count, 120), query.failure
    query.wait_for_records(count + 1, settle)
    got = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=30)
    return [(KEY.unpack(r["key"])[0], json.loads(r["value"]), r["timestamp"]) for r in got]


def test_a_record_at_time_zero_joins(ksql, broker):
    # joins.json "left join - with synthetic join column in projection"
    l, r, out = streams(ksql, broker, ("V0 INT, V1 INT", "V0 INT, V1 INT"))
    send(broker, l, [(1, {"V0": 2, "V1": 3}, 0)])
    send(broker, r, [(1, {"V0": 4, "V1": 5}, 100)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT ROWKEY AS ID, L.ID, R.ID, L.V0, R.V1 FROM {l} L LEFT JOIN {r} R "
                     "WITHIN 1 SECOND ON ABS(L.id) = ABS(R.id);")
    assert written(broker, query, out, 1) == [(1, {"L_ID": 1, "R_ID": 1, "L_V0": 2, "R_V1": 5}, 100)]
