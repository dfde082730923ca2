"""Reads that leave out what nothing reads (engine.tree.reads): the raw bytes of records
decoded in the reader's worker, the topic, an unused timestamp. Poison records and tombstones
interleaved with good ones give the same rows and processing-log entries (topic, partition,
offset, message, key and value bytes) as a read that carries everything."""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import functions as F

from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.engine import api

VALUES = [json.dumps({"ID": i, "name": f"n{i}"}).encode() for i in range(400)]
POISON = [b'{"id": "x"}', b"not json", b'{"id": 1} x', b"[1]", b'{"id": 1.5}']


def _everything(monkeypatch, session):
    """Reads carry every raw column, as before they were chosen per query."""
    monkeypatch.setitem(session.settings, api.PRUNE_RAW_COLUMNS, "false")


def _run(session, query: str, **kw):
    before = len(session.processing_log(raw=True))
    frame = session.sql(query, **kw).astype(object)
    rows = sorted((tuple(None if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)), key=repr)
    log = session.processing_log(raw=True).iloc[before:]
    entries = sorted(tuple(None if pd.isna(v) else v for v in row)
                     for row in log[["TOPIC", "PARTITION", "OFFSET", "MESSAGE", "KEY", "VALUE"]].values.tolist())
    return rows, entries


def _produced(bootstrap, topic, records):
    """Produce `records` ((partition, key, value) each) one partition at a time: {(partition, offset): record}."""
    produce(bootstrap, topic, [{"key": k, "value": v, "partition": p} for p, k, v in records])
    at, seen = {}, {}
    for p, k, v in records:
        at[(p, seen.get(p, 0))] = (k, v)
        seen[p] = seen.get(p, 0) + 1
    return at


def test_json_values_with_poison_and_tombstones(session, spark, broker, new_topic, monkeypatch):
    topic = new_topic(2)
    records = []
    for i, v in enumerate(VALUES):
        records.append((i % 2, f"k{i}".encode(), v))
        if i % 37 == 0:
            records.append((i % 2, f"bad{i}".encode(), POISON[i // 37 % len(POISON)]))
        if i % 41 == 0:
            records.append((i % 2, f"gone{i}".encode(), None))  # a tombstone
    produced = _produced(broker.bootstrap_servers, topic, records)
    session.sql(f"CREATE STREAM rv (id BIGINT, name STRING) WITH (kafka_topic='{topic}', value_format='JSON');")

    prepared = api.prepare(session, parse_statement("SELECT id, name FROM rv;"))
    options = prepared.read.options()
    assert options["rawBytes"] == "undecoded" and json.loads(options["metadataColumns"]) == ["partition", "offset"]
    assert "topic" not in prepared.raw.columns and "timestamp" not in prepared.raw.columns
    raw = prepared.raw.agg(F.sum((F.col("__json_decoded") & F.col("value").isNull()).cast("int")).alias("left_out"),
                           F.sum((~F.col("__json_decoded") & F.col("value").isNotNull()).cast("int")).alias("kept"),
                           F.sum(F.col("value").isNull().cast("int")).alias("null")).collect()[0]
    tombstones = sum(v is None for _, _, v in records)
    # the worker decoded many good records (a part of 64 around a poison record goes to Spark)
    assert 100 < raw["left_out"] < len(VALUES)
    assert raw["left_out"] + raw["kept"] + tombstones == len(records) and raw["null"] == raw["left_out"] + tombstones

    for query in ("SELECT id, name FROM rv;", f"SELECT id, name FROM rv EMIT CHANGES LIMIT {len(VALUES)};"):
        rows, log = _run(session, query)
        assert sorted(rows) == sorted((i, f"n{i}") for i in range(len(VALUES)))  # every good row, exact
        poison = {(p, o) for (p, o), (_, v) in produced.items() if v in POISON}
        assert {(p, o) for _, p, o, _, _, _ in log} == poison  # every bad record, once
        for t, p, o, message, key, value in log:  # named, with its bytes
            assert t == topic and message and (key, value) == produced[(p, o)]
        with monkeypatch.context() as m:
            _everything(m, session)
            assert _run(session, query) == (rows, log)  # what a read of every column gives


def test_json_keys_and_values_with_poison_and_tombstones(session, broker, new_topic, monkeypatch):
    topic = new_topic(1)
    records = []
    for i in range(200):
        records.append((0, json.dumps({"K": i}).encode(), json.dumps({"id": i}).encode()))
    odd = [(b'{"k": "x"}', b'{"id": 100}'), (b'{"k": 101}', b"bad value"), (b"bad key", b"bad value"),
           (None, b'{"id": 102}'), (b'{"k": 103}', None), (None, None), (b'{"k": 104} x', b'{"id": 104}')]
    records[150:150] = [(0, k, v) for k, v in odd]
    produced = _produced(broker.bootstrap_servers, topic, records)
    session.sql(f"CREATE STREAM rk (k STRUCT<k BIGINT> KEY, id BIGINT) WITH (kafka_topic='{topic}', format='JSON');")
    prepared = api.prepare(session, parse_statement("SELECT k, id FROM rk;"))
    assert prepared.read.options()["rawBytes"] == "undecoded"
    both = F.col("__json_decoded") & F.col("__json_key_decoded")
    left_out = prepared.raw.where(both & F.col("key").isNull() & F.col("value").isNull()).count()
    assert 100 < left_out < 200 and prepared.raw.where(~both & F.col("value").isNull()).count() == 2  # tombstones

    rows, log = _run(session, "SELECT k, id FROM rk;")
    found = [(k and k["K"], i) for k, i in rows]
    assert all(found.count((i, i)) == 1 for i in range(200)), rows  # every good record, once, exact
    # a member of another type reads as NULL in ksqlDB's JSON, a NULL key is no error in a stream
    assert sorted(row for row in found if row[0] != row[1]) == [(None, 100), (None, 102)]
    for t, p, o, message, key, value in log:
        assert t == topic and (key, value) == produced[(p, o)]
    assert {produced[(p, o)] for _, p, o, _, _, _ in log} == {(b'{"k": 101}', b"bad value"),
                                                              (b"bad key", b"bad value"),
                                                              (b'{"k": 104} x', b'{"id": 104}')}
    with monkeypatch.context() as m:
        _everything(m, session)
        assert _run(session, "SELECT k, id FROM rk;") == (rows, log)
