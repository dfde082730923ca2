"""Persistent queries end to end: ksql statements write real topics, read back with confluent-kafka."""

from __future__ import annotations

import io
import json
import struct
import time
import uuid

import fastavro
import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.kafka import admin
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000


def read_back(broker, topic, count, timeout=30):
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count,
                            timeout_s=timeout, until_end=False)
    return sorted(records, key=lambda r: (r["timestamp"], r["partition"], r["offset"]))


def names(prefix="s"):
    tag = uuid.uuid4().hex[:8].upper()
    return f"{prefix.upper()}_{tag}", f"t-{tag.lower()}"


def test_csas_reencodes_value_to_avro_and_keeps_key_headers_timestamps(ksql, broker, registry):
    src, topic = names()
    out = f"OUT_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=2);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"V": f"v{i}"}).encode(), "timestamp": BASE + i,
         "headers": [("trace", f"t{i}".encode()), ("empty", None)]} for i in range(6)]
        + [{"key": struct.pack(">i", 6), "value": b"{not json", "timestamp": BASE + 6, "partition": 1}])
    query = ksql.sql(f"CREATE STREAM {out} WITH (VALUE_FORMAT='AVRO') AS SELECT * FROM {src} WHERE V <> 'v3';")
    assert query.id == f"CSAS_{out}_1"
    assert query.wait_for_records(5, 90), query.failure
    deadline = time.monotonic() + 30
    while ksql.processing_log().empty and time.monotonic() < deadline:
        time.sleep(0.2)
    logged = ksql.processing_log()  # the bad record is logged where it is, the good ones written
    assert list(logged[["QUERY", "TOPIC", "PARTITION"]].itertuples(index=False, name=None)) == [(query.id, topic, 1)]
    assert query.records_out == 5 and query.status().errors == 1
    got = read_back(broker, out, 5)
    latest = sr.client(registry).get_latest_version(f"{out}-value")
    schema = fastavro.parse_schema(json.loads(latest.schema.schema_str))
    values = [fastavro.schemaless_reader(io.BytesIO(r["value"][5:]), schema) for r in got]
    assert [r["key"] for r in got] == [struct.pack(">i", i) for i in (0, 1, 2, 4, 5)]  # KAFKA key inherited
    assert values == [{"V": f"v{i}"} for i in (0, 1, 2, 4, 5)]
    assert [r["timestamp"] for r in got] == [BASE + i for i in (0, 1, 2, 4, 5)]
    assert [r["headers"] for r in got] == [[("trace", f"t{i}".encode()), ("empty", None)] for i in (0, 1, 2, 4, 5)]
    assert all(r["value"][1:5] == latest.schema_id.to_bytes(4, "big") for r in got)
    described = ksql.sql(f"DESCRIBE {out};")
    assert list(described.iloc[:, 0])[:2] == ["ID", "V"]
    assert sorted(ksql.sql(f"SELECT * FROM {out} EMIT CHANGES LIMIT 5;")["V"]) == ["v0", "v1", "v2", "v4", "v5"]


@pytest.mark.parametrize("count", ["COUNT(*)", "COUNT()"])  # ksqlDB's COUNT() counts rows too
def test_ctas_group_by_writes_a_compacted_changelog(ksql, broker, count):
    src, topic = names()
    out = f"COUNTS_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, COLOR STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"COLOR": c}).encode(), "timestamp": BASE + i}
        for i, c in enumerate(["red", "blue", "red"])])
    # the grouping key selected with its source's qualifier is the key all the same
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT s.COLOR, {count} AS N FROM {src} s GROUP BY COLOR;")
    assert query.id == f"CTAS_{out}_1"
    assert query.wait_for_records(2, 90), query.failure
    # a changelog: the records may come in one micro-batch (red 2, blue 1) or more (red 1 first)
    want, deadline = {b"red": {"N": 2}, b"blue": {"N": 1}}, time.monotonic() + 60
    while True:
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=5, until_end=True)
        latest = {r["key"]: json.loads(r["value"]) for r in sorted(got, key=lambda r: r["offset"])}
        if latest == want or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert latest == want
    conf = admin.admin_client(broker.bootstrap_servers)
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource("topic", out)
    configs = conf.describe_configs([resource])[resource].result(timeout=10)
    assert configs["cleanup.policy"].value == "compact"


def test_insert_into_select_lifecycle_and_drop_message(ksql, broker):
    src, topic = names()
    other, other_topic = names("o")
    out = f"ALL_{src}"
    # INSERT INTO widens a DECIMAL(4,1) result into the target's DECIMAL(6,2) column, as ksqlDB does
    for name, t, decimal in ((src, topic, "DECIMAL(6,2)"), (other, other_topic, "DECIMAL(4,1)")):
        ksql.sql(f"CREATE STREAM {name} (ID INT KEY, V STRING, D {decimal}) "
                 f"WITH (kafka_topic='{t}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"key": struct.pack(">i", 1), "value": b'{"V":"a","D":1.25}'}])
    produce(broker.bootstrap_servers, other_topic, [{"key": struct.pack(">i", 2), "value": b'{"V":"b","D":3.5}'}])
    first = ksql.sql(f"CREATE STREAM {out} AS SELECT * FROM {src};")
    second = ksql.sql(f"INSERT INTO {out} SELECT * FROM {other};")
    assert second.id == "INSERTQUERY_2"
    assert first.wait_for_records(1, 90) and second.wait_for_records(1, 90)
    assert sorted(r["value"] for r in read_back(broker, out, 2)) == [b'{"V":"a","D":1.25}', b'{"V":"b","D":3.50}']
    shown = ksql.sql("SHOW QUERIES;")
    assert set(shown["Query ID"]) == {first.id, second.id}
    assert set(shown["Sink Kafka Topic"]) == {out}
    extended = ksql.sql("SHOW QUERIES EXTENDED;")
    assert "Consumer Lag" in extended.columns and extended["Records Written"].min() >= 1
    with pytest.raises(StatementError) as refused:
        ksql.sql(f"DROP STREAM {out};")
    assert str(refused.value) == (
        f"Cannot drop {out}.\nThe following queries read from this source: [].\n"
        f"The following queries write into this source: [{first.id}, {second.id}].\n"
        f"You need to terminate them before dropping {out}.")
    with pytest.raises(StatementError, match=f"The following queries read from this source: \\[{first.id}\\]"):
        ksql.sql(f"DROP STREAM {src};")
    explained = dict(ksql.sql(f"EXPLAIN {first.id};").values.tolist())
    assert explained["Sink Kafka Topic"] == out and explained["Sources"] == src
    assert explained["Operators"].splitlines()[-1].startswith(f"└─ Scan STREAM {src.upper()}: topic ")
    with pytest.raises(StatementError, match="Query with id:NOPE_1 does not exist"):
        ksql.sql("EXPLAIN NOPE_1;")
    ksql.sql(f"TERMINATE {second.id.lower()};")  # ids match case-insensitively, as in ksqlDB's CLI
    assert list(ksql.sql("SHOW QUERIES;")["Query ID"]) == [first.id]
    ksql.sql("TERMINATE ALL;")
    assert ksql.sql("SHOW QUERIES;").empty
    ksql.sql(f"DROP STREAM {out} DELETE TOPIC;")


@pytest.mark.parametrize("statement, message", [
    ("CREATE STREAM X_{tag} WITH (key_format='NONE') AS SELECT * FROM {src} PARTITION BY V;",
     "The 'NONE' format can only be used when no columns are defined. Got: [`V` STRING KEY]"),
    ("CREATE TABLE X_{tag} AS SELECT ID, V, COUNT(*) AS N FROM {src} GROUP BY ID, V;",
     "Key format does not support schema.\nformat: KAFKA\nschema: Persistence{{columns=[`ID` INTEGER KEY, "
     "`V` STRING KEY], features=[]}}\nreason: The 'KAFKA' format only supports a single field. Got: "
     "[`ID` INTEGER KEY, `V` STRING KEY]\nStatement: CREATE TABLE X_{tag} AS SELECT\n  S_{tag}.ID ID,\n"
     "  S_{tag}.V V,\n  COUNT(*) N\nFROM S_{tag} S_{tag}\nGROUP BY S_{tag}.ID, S_{tag}.V\nEMIT CHANGES"),
    ("CREATE STREAM X_{tag} AS SELECT V FROM {src};",
     "Key missing from projection (ie, SELECT). \nThe query used to build "
     "`X_{tag}` must include the key column ID in its projection (eg, SELECT ID...)."),
    ("CREATE STREAM X_{tag} WITH (FORMAT='JSON', KEY_FORMAT='KAFKA') AS SELECT * FROM {src};",
     "Cannot supply both 'KEY_FORMAT' and 'FORMAT' properties, as 'FORMAT' sets both key and value formats. "
     "Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'."),
    ("CREATE STREAM X_{tag} AS SELECT ID, ROWOFFSET FROM {src};",
     "Reserved column name in select: `ROWOFFSET`. Please remove or alias the column."),
])
def test_ksqldb_messages(ksql, statement, message):
    src, topic = names()
    tag = src.split("_")[1]
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    with pytest.raises(StatementError) as refused:
        ksql.sql(statement.format(src=src, tag=tag))
    assert str(refused.value) == message.format(tag=tag)
    assert ksql.sql("SHOW QUERIES;").empty


def test_key_columns_are_selected_once_and_every_key_is_selected(ksql):
    """ksqlDB's key rules reach CSAS and INSERT INTO (tests/unit/test_key_projection.py has the rest)."""
    src, topic = names()
    out, table = f"C_{src}", f"T_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    ksql.sql(f"CREATE STREAM {out} (ID INT KEY, COPY INT, V STRING) WITH (kafka_topic='{topic}-c', value_format='JSON', "
             "partitions=1);")
    ksql.sql(f"CREATE TABLE {table} (ID INT PRIMARY KEY, V STRING) WITH (kafka_topic='{topic}-t', value_format='JSON', "
             "partitions=1);")
    for statement, message in (
            (f"CREATE STREAM X_{src} AS SELECT ID, ID AS ID2, V FROM {src};",
             "The projection contains a key column (`ID`) more than once, aliased as: ID and ID2.\nEach key column "
             "must only be in the projection once. If you intended to copy the key into the value, then consider "
             "using the AS_VALUE function to indicate which key reference should be copied."),
            (f"INSERT INTO {out} SELECT AS_VALUE(ID) AS COPY, V FROM {src};",
             f"Key missing from projection (ie, SELECT). \nThe query used to build `{out}` must include the key "
             "column ID in its projection (eg, SELECT ID...)."),
            (f"INSERT INTO {table} SELECT * FROM {src};",
             f"INSERT INTO can only be used to insert into a stream. {table} is a table.")):
        with pytest.raises(StatementError) as refused:
            ksql.sql(statement)
        assert str(refused.value) == message
    assert ksql.sql("SHOW QUERIES;").empty


def test_header_columns_land_in_the_value_and_headers_pass_through(ksql, broker):
    src, topic = names()
    out, plain = f"H_{src}", f"P_{src}"
    ksql.sql(f"CREATE STREAM {src} (K STRING KEY, H ARRAY<STRUCT<key STRING, value BYTES>> HEADERS, V BIGINT) "
             f"WITH (kafka_topic='{topic}', value_format='json', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": b"k1", "value": b'{"v": 40000}', "headers": []},
        {"key": b"k2", "value": b'{"v": 40000}', "headers": [("abc", b"!")]}])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT * FROM {src};")
    assert query.wait_for_records(2, 90), query.failure
    got = read_back(broker, out, 2)
    assert [(r["key"], json.loads(r["value"]), r["headers"]) for r in got] == [
        (b"k1", {"V": 40000, "H": []}, []),
        (b"k2", {"V": 40000, "H": [{"KEY": "abc", "VALUE": "IQ=="}]}, [("abc", b"!")])]
    ksql.sql(f"CREATE STREAM {plain} (K STRING KEY, H ARRAY<STRUCT<key STRING, value BYTES>>, V BIGINT) "
             f"WITH (kafka_topic='{topic}-2', value_format='json', partitions=1);")
    with pytest.raises(StatementError, match=f"^Cannot insert into {src} because it has header columns$"):
        ksql.sql(f"INSERT INTO {src} SELECT * FROM {plain};")


def test_klip50_table_copy_keeps_partition_and_offset_for_pull_queries(ksql, broker):
    src, topic = names()
    copy = f"POS_{src}"
    ksql.sql(f"CREATE TABLE {src} (ID INT PRIMARY KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=2);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"V": f"v{i}"}).encode(), "partition": i % 2}
        for i in range(4)] + [{"key": struct.pack(">i", 2), "value": b'{"V": "v2b"}', "partition": 0}])
    query = ksql.sql(f"CREATE TABLE {copy} AS SELECT *, ROWPARTITION AS PART, ROWOFFSET AS OFF FROM {src};")
    assert query.wait_for_records(5, 90), query.failure
    row = ksql.sql(f"SELECT * FROM {copy} WHERE ID = 2;")
    assert row.to_dict("records") == [{"ID": 2, "V": "v2b", "PART": 0, "OFF": 2}]
    with pytest.raises(StatementError, match="Pull queries don't support the following columns in SELECT clauses: `ROWOFFSET`"):
        ksql.sql(f"SELECT ID, ROWOFFSET FROM {copy};")


def test_windowed_table_key_is_inner_key_then_window_start(ksql, broker):
    src, topic = names()
    out = f"W_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", 7), "value": b'{"V": "x"}', "timestamp": BASE + offset} for offset in (0, 1000, 12000)])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, WINDOWSTART AS WS, COUNT(*) AS N FROM {src} "
                     "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY ID;")
    assert query.wait_for_records(2, 90), query.failure
    got = {r["key"]: json.loads(r["value"]) for r in read_back(broker, out, 2)}
    start = BASE - BASE % 10_000
    assert got == {struct.pack(">i", 7) + struct.pack(">q", start): {"N": 2},
                   struct.pack(">i", 7) + struct.pack(">q", start + 10_000): {"N": 1}}


def test_a_failed_query_restarts_from_its_checkpoint_after_a_back_off(ksql, broker, monkeypatch):
    """As ksqlDB retries a failed persistent query: ERROR with the reason, then RUNNING again from
    the checkpoint, the failed micro-batch written once it succeeds (nothing lost)."""
    from kafkasql_magic.sinks.runner import PersistentQuery

    src, topic = names()
    out = f"OUT_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"V": f"v{i}"}).encode()} for i in range(4)])
    failures, write_batch = [], PersistentQuery._on_batch

    def fails_once(self, batch, batch_id):
        if not failures:
            failures.append(batch_id)
            raise RuntimeError("the first micro-batch fails")
        return write_batch(self, batch, batch_id)

    monkeypatch.setattr(PersistentQuery, "_on_batch", fails_once)
    ksql.sql("SET 'ksql.query.retry.backoff.initial.ms'='3000';")
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT * FROM {src};")
    deadline = time.monotonic() + 90
    while query.state != "ERROR" and query.records_out == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert query.state == "ERROR" and "the first micro-batch fails" in str(query.failure)
    assert query.wait_for_records(4, 90), query.failure
    assert (query.state, query.restarts, failures) == ("RUNNING", 1, [0])
    assert sorted(r["key"] for r in read_back(broker, out, 4)) == [struct.pack(">i", i) for i in range(4)]
    with pytest.raises(StatementError, match="^Invalid value soon for configuration "
                                             "ksql.query.retry.backoff.max.ms: Not a number of type LONG$"):
        ksql.sql("SET 'ksql.query.retry.backoff.max.ms'='soon';")


def test_a_result_key_holding_a_map_is_refused_with_ksqldbs_message(ksql):
    """PARTITION BY or GROUP BY a MAP: refused as ksqlDB refuses it, before Spark sees the key."""
    src, topic = names()
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, M MAP<STRING, INT>, V INT) "
             f"WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    for statement in (f"CREATE STREAM P_{src} AS SELECT * FROM {src} PARTITION BY M;",
                      f"CREATE TABLE G_{src} AS SELECT M, COUNT(*) AS N FROM {src} GROUP BY M;"):
        with pytest.raises(StatementError) as refused:
            ksql.sql(statement)
        assert str(refused.value) == (
            "Map keys, including types that contain maps, are not supported as they may lead to unexpected "
            "behavior due to inconsistent serialization. Key column name: `M`. Column type: MAP<STRING, INTEGER>. "
            "See https://github.com/confluentinc/ksql/issues/6621 for more.")
    assert ksql.sql("SHOW QUERIES;").empty


def test_a_stateless_query_reads_persistent_sized_micro_batches_an_aggregation_push_sized(ksql, broker):
    """A filter-and-project CSAS reads up to `persistent_records_per_trigger` records per
    micro-batch (every micro-batch costs a job and the JVM's compiling anew), an aggregation the
    push queries' `max_records_per_trigger`; the records written are the same, in order."""
    src, topic = names()
    ksql.max_records_per_trigger = 5
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, N INT) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"N": i}).encode(), "timestamp": BASE + i} for i in range(40)])
    query = ksql.sql(f"CREATE STREAM ODD_{src} AS SELECT ID, N * 10 AS M FROM {src} WHERE N % 2 = 1;")
    counts = ksql.sql(f"CREATE TABLE COUNT_{src} AS SELECT ID, COUNT(*) AS C FROM {src} GROUP BY ID;")
    assert query.wait_for_records(20, 90), query.failure
    assert counts.wait_for_records(40, 90), counts.failure
    got = read_back(broker, f"ODD_{src}", 20)
    assert [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (struct.pack(">i", i), {"M": i * 10}, BASE + i) for i in range(1, 40, 2)]
    assert _batch_sizes(query, 40) == [40]
    assert max(_batch_sizes(counts, 40)) == 5


def _batch_sizes(query, total: int, timeout: float = 30) -> list[int]:
    """The input records of each micro-batch of `query`, once its progress reports count `total`."""
    deadline = time.monotonic() + timeout
    while True:
        sizes = [p["numInputRows"] for p in query._query.recentProgress if p["numInputRows"]]
        if sum(sizes) >= total or time.monotonic() > deadline:
            return sizes
        time.sleep(0.2)
