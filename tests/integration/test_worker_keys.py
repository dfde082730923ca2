"""AVRO keys and values, and JSON keys, decoded in the reader's worker (kafka.worker_decoding):
every good record comes back with its exact values, every bad one is logged with its offset,
record for record what the planner's own decoding gives."""

from __future__ import annotations

import io
import json

import pandas as pd
from pyspark.sql import functions as F

from kafkasql_magic.engine.decode.rows_spark import worker_decoding
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.engine import api

KEY = {"type": "record", "name": "K", "fields": [{"name": "k", "type": "long"}]}
VALUE = {"type": "record", "name": "V", "fields": [
    {"name": "id", "type": "long"}, {"name": "Name", "type": ["null", "string"]}, {"name": "amount", "type": "double"},
    {"name": "n", "type": ["null", "int"]}, {"name": "ok", "type": "boolean"}]}  # flat: read by columns


def _rows_and_log(session, query, topic):
    before = len(session.processing_log())
    frame = session.sql(query).astype(object)
    rows = sorted((tuple(None if not isinstance(v, list) and pd.isna(v) else v for v in row)
                   for row in frame.itertuples(index=False)), key=repr)
    log = session.processing_log().iloc[before:]
    log = log[log["TOPIC"] == topic]
    return rows, sorted(map(tuple, log[["PARTITION", "OFFSET", "MESSAGE"]].values.tolist()))


def _offsets_of(records, chosen):
    """(partition, offset) of the chosen records, in the order the log is sorted."""
    next_offset: dict = {}
    found = []
    for r in records:
        offset = next_offset.get(r["partition"], 0)
        next_offset[r["partition"]] = offset + 1
        if chosen(r):
            found.append((r["partition"], offset))
    return sorted(found)


def _planner_only(session, query, topic, monkeypatch):
    with monkeypatch.context() as m:
        m.setitem(session.settings, api.DECODE_IN_READER, "false")
        return _rows_and_log(session, query, topic)


def test_avro_keys_and_values_decoded_in_the_worker(spark, broker, registry, new_topic, monkeypatch):
    import fastavro
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    import kafkasql_magic as ks

    topic = new_topic(2)
    client = SchemaRegistryClient({"url": registry})
    ids = {role: client.register_schema(f"{topic}-{role}", Schema(json.dumps(s), "AVRO"))
           for role, s in (("key", KEY), ("value", VALUE))}

    def framed(role, schema, record, magic=b"\x00", schema_id=None):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
        return magic + (ids[role] if schema_id is None else schema_id).to_bytes(4, "big") + out.getvalue()

    def value(i):
        return {"id": i, "Name": None if i % 7 == 0 else f"n{i}", "amount": i / 8, "n": None if i % 5 else -i,
                "ok": i % 2 == 0}

    good = [(framed("key", KEY, {"k": i}), framed("value", VALUE, value(i))) for i in range(60)]
    bad = [(good[0][0], b"\x01" + good[1][1][1:]),  # wrong magic byte
           (good[0][0], framed("value", VALUE, value(1), schema_id=999999)),  # unknown schema id
           (good[0][0], good[2][1] + b"\x00\x00"),  # bytes left over
           (good[0][0], good[3][1][:-3]),  # truncated
           (good[0][0], b"\x00\x00"),  # too short for the framing
           (b"\x02" + good[4][0][1:], good[4][1])]  # a bad key on a good value
    records = []
    for i, (k, v) in enumerate(good):
        records.append({"key": k, "value": v, "partition": i % 2})
        if i % 10 == 5:
            records.append({"key": bad[i // 10][0], "value": bad[i // 10][1], "partition": i % 2})
    records.append({"key": None, "value": framed("value", VALUE, value(99)), "partition": 0})  # no key: a row
    produce(broker.bootstrap_servers, topic, records, create_partitions=2)

    session = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry,
                         timeout=90)
    try:
        session.sql(f"CREATE STREAM wa (k BIGINT KEY, id BIGINT, name STRING, amount DOUBLE, n INT, ok BOOLEAN) "
                    f"WITH (kafka_topic='{topic}', format='AVRO');")
        decoding = worker_decoding(session.catalog.get("WA"))
        assert decoding.avro_key is not None and decoding.avro_value is not None
        raw = spark.read.format("kafkasql").options(
            **{"bootstrap.servers": broker.bootstrap_servers, "topic": topic, **decoding.options()}).load()
        read = raw.where(F.col("__avro_value.__kafkasql_avro_error__").isNull()).count()
        assert read == len(good) + 2  # decoded in the worker: every good value (one under a bad key, one keyless)

        query = "SELECT k, id, name, amount, n, ok FROM wa;"
        rows, log = _rows_and_log(session, query, topic)
        expected = [(i, i, None if i % 7 == 0 else f"n{i}", i / 8, None if i % 5 else -i, i % 2 == 0)
                    for i in range(60)]
        expected.append((None, 99, "n99", 99 / 8, None, False))
        assert rows == sorted(expected, key=repr)  # every good record, exact, once
        assert [(p, o) for p, o, _ in log] == _offsets_of(records, lambda r: (r["key"], r["value"]) in bad)
        messages = " | ".join(m for _, _, m in log)
        for reason in ("magic byte", "999999", "bytes left over", "truncated"):
            assert reason in messages, messages
        assert any("key" in m.lower() for _, _, m in log)
        assert (rows, log) == _planner_only(session, query, topic, monkeypatch)  # the UDF's, record for record
    finally:
        session.stop()


def test_json_keys_decoded_in_the_worker(session, spark, broker, new_topic, monkeypatch):
    struct_topic, columns_topic = new_topic(2), new_topic(1)
    good = [json.dumps({"a": i, "B": f"b{i}"} if i % 2 else {"A": i, "b": f"b{i}", "extra": [1]}).encode()
            for i in range(40)]
    odd = [b'{"a": "7"}', b'{"a": 1} x', b"null", b"[1]", b'{"a": 1.5}', b"not json", None, b'{"a": 2, "A": 3}',
           b'{"a": 2147483648000}']
    records = []
    for i, k in enumerate(good):
        records.append({"key": k, "value": json.dumps({"id": i}).encode(), "partition": i % 2})
        if i % 4 == 1 and i // 4 < len(odd):
            records.append({"key": odd[i // 4], "value": json.dumps({"id": 1000 + i}).encode(), "partition": i % 2})
    produce(broker.bootstrap_servers, struct_topic, records)
    one_partition = [dict(r, partition=0) for r in records]
    produce(broker.bootstrap_servers, columns_topic, one_partition)
    session.sql(f"CREATE STREAM jk (k STRUCT<a BIGINT, b STRING> KEY, id BIGINT) "
                f"WITH (kafka_topic='{struct_topic}', format='JSON');"
                f"CREATE STREAM jc (a BIGINT KEY, b STRING KEY, id BIGINT) "
                f"WITH (kafka_topic='{columns_topic}', format='JSON');")
    assert worker_decoding(session.catalog.get("JK")).json_key == (("A", "BIGINT"), ("B", "STRING"))
    assert worker_decoding(session.catalog.get("JC")).json_key == (("A", "BIGINT"), ("B", "STRING"))
    raw = spark.read.format("kafkasql").options(**{"bootstrap.servers": broker.bootstrap_servers, "topic": struct_topic,
                                                   **worker_decoding(session.catalog.get("JK")).options()}).load()
    assert raw.where(F.col("__json_key_decoded")).count() >= len(good) // 2  # the worker did decode keys

    for query, topic, produced, as_row in (
            ("SELECT k, id FROM jk;", struct_topic, records, lambda k, i: ({"A": k, "B": f"b{k}"}, i)),
            ("SELECT a, b, id FROM jc;", columns_topic, one_partition, lambda k, i: (k, f"b{k}", i))):
        rows, log = _rows_and_log(session, query, topic)
        by_planner = _planner_only(session, query, topic, monkeypatch)
        assert (rows, log) == by_planner  # record for record the planner's rows and errors
        for i in range(40):  # every good record, with its exact values
            assert as_row(i, i) in rows
        logged = {(p, o) for p, o, _ in log}
        assert logged <= set(_offsets_of(produced, lambda r: r["key"] in odd))  # only odd keys fail
        assert set(_offsets_of(produced, lambda r: r["key"] in (b"not json", b"[1]", b'{"a": 1} x'))) <= logged
        assert len(rows) + len(log) == len(records)  # nothing lost
