"""Materialize's CREATE SINK end to end: sink topics read back with confluent-kafka."""

from __future__ import annotations

import io
import json
import os
import struct
import time
import uuid

import fastavro
import pytest

import kafkasql_magic as ks
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000
MZ = {"dialect": "materialize"}


@pytest.fixture
def mz(broker, spark, registry, tmp_path):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, schema_registry_url=registry, spark=spark,
                   timeout=90, state_dir=str(tmp_path / "state"))
    yield s
    s.stop()


def tag() -> str:
    return uuid.uuid4().hex[:8]


def read_back(broker, topic, count, timeout=60):
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count,
                            timeout_s=timeout, until_end=False)
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


def upsert_source(mz, broker, new_topic, records):
    """A TEXT/TEXT upsert source keyed by `id` holding `records` ((key, value or None) pairs)."""
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [
        {"key": k.encode(), "value": None if v is None else v.encode(), "timestamp": BASE + i}
        for i, (k, v) in enumerate(records)])
    name = f"src_{tag()}"
    mz.sql(f"CREATE SOURCE {name} FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
           "INCLUDE KEY AS id ENVELOPE UPSERT", **MZ)
    return name


def test_upsert_sink_writes_keys_values_and_tombstones(mz, broker, new_topic):
    src = upsert_source(mz, broker, new_topic, [("k1", "a"), ("k2", "b"), ("k1", "c"), ("k2", None)])
    out = f"out-{tag()}"
    query = mz.sql(f"CREATE SINK snk_{out[4:]} FROM {src} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (id) FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert query.id.startswith("SINK_SNK_")
    assert query.wait_for_records(4, 120), query.failure
    got = read_back(broker, out, 4)
    keys = [json.loads(r["key"]) for r in got]
    values = [None if r["value"] is None else json.loads(r["value"]) for r in got]
    latest = {k["id"]: v for k, v in zip(keys, values)}
    assert latest == {"k1": {"id": "k1", "text": "c"}, "k2": None}  # the delete is a tombstone
    assert {"id": "k1", "text": "a"} in values  # every change is written, not only the last
    assert not any(r["headers"] for r in got)  # no HEADERS column: no headers
    shown = mz.sql("SHOW SINKS", **MZ)
    assert list(shown.columns) == ["name", "type", "size", "cluster"]  # Materialize's
    row = shown[shown.name == f"snk_{out[4:]}"].iloc[0]
    assert (row.type, row["size"], row.cluster) == ("kafka", None, None)
    created = mz.sql(f"SHOW CREATE SINK snk_{out[4:]}", **MZ)
    assert created.to_dict("records") == [{
        "name": f"materialize.public.snk_{out[4:]}",
        "create_sql": f"CREATE SINK snk_{out[4:]} FROM {src} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                      f"(TOPIC '{out}') KEY (id) FORMAT JSON ENVELOPE UPSERT"}]
    assert query.id in mz.sql("SHOW QUERIES;")["Query ID"].tolist()
    with pytest.raises(ks.StatementError, match=f'^sink "materialize.public.snk_{out[4:]}" already exists$'):
        mz.sql(f"CREATE SINK snk_{out[4:]} FROM {src} INTO KAFKA BROKER 'x:1' (TOPIC 'o') KEY (id) "
               "FORMAT JSON ENVELOPE UPSERT", **MZ)
    mz.sql(f"DROP SINK snk_{out[4:]}", **MZ)
    assert query.state == "TERMINATED"
    assert f"snk_{out[4:]}" not in mz.sql("SHOW SINKS", **MZ).name.tolist()
    with pytest.raises(ks.StatementError, match=f"^unknown catalog item 'snk_{out[4:]}'$"):
        mz.sql(f"DROP SINK snk_{out[4:]}", **MZ)


def test_debezium_sink_pairs_before_and_after_by_the_relations_key(mz, broker, new_topic):
    src = upsert_source(mz, broker, new_topic, [("k1", "a"), ("k2", "x"), ("k1", "b"), ("k1", None)])
    out = f"dbz-{tag()}"
    query = mz.sql(f"CREATE SINK dbz_{out[4:]} FROM {src} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
           f"(TOPIC '{out}') FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(4, 120), query.failure
    got = read_back(broker, out, 4)
    values = [json.loads(r["value"]) for r in got]
    assert [r["key"] for r in got] == [None] * 4  # no KEY: records without a key
    k1 = [v for v in values if (v["after"] or v["before"])["id"] == "k1"]
    assert k1 == [{"before": None, "after": {"id": "k1", "text": "a"}},
                  {"before": {"id": "k1", "text": "a"}, "after": {"id": "k1", "text": "b"}},
                  {"before": {"id": "k1", "text": "b"}, "after": None}]
    assert {"before": None, "after": {"id": "k2", "text": "x"}} in values


def test_a_debezium_sink_pairs_by_its_key_when_the_key_is_not_the_relations(mz, broker, new_topic):
    """Materialize pairs a sink's changes by its KEY: an update that changes a KEY column is a
    delete under the old key and an insert under the new one, not one record."""
    src = upsert_source(mz, broker, new_topic, [("k1", "a"), ("k2", "x"), ("k1", "b"), ("k1", None)])
    out = f"dbk-{tag()}"
    query = mz.sql(f"CREATE SINK dbk_{out[4:]} FROM {src} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (text) FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(4, 120), query.failure
    got = read_back(broker, out, 5)
    records = [(json.loads(r["key"]), json.loads(r["value"])) for r in got]
    a, b, x = ({"id": k, "text": t} for k, t in (("k1", "a"), ("k1", "b"), ("k2", "x")))
    assert sorted(records, key=str) == sorted([({"text": "a"}, {"before": None, "after": a}),
                                               ({"text": "a"}, {"before": a, "after": None}),  # a -> b: a delete
                                               ({"text": "b"}, {"before": None, "after": b}),  # and an insert
                                               ({"text": "b"}, {"before": b, "after": None}),
                                               ({"text": "x"}, {"before": None, "after": x})], key=str)
    for key in ({"text": "a"}, {"text": "b"}):  # each key's records in order: inserted, then deleted
        assert [v["after"] is None for k, v in records if k == key] == [False, True]


def test_headers_column_of_a_ksql_stream_and_avro_debezium(mz, broker, new_topic, registry):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"V": f"v{i}", "H": {"trace": f"t{i}",
                                                                             "materialize-x": "dropped"}}).encode(),
         "timestamp": BASE + i} for i in range(3)])
    stream = f"S_{tag().upper()}"
    mz.sql(f"CREATE STREAM {stream} (ID INT KEY, V STRING, H MAP<STRING, STRING>) "
           f"WITH (kafka_topic='{topic}', value_format='JSON');")
    out = f"hdr-{tag()}"
    query = mz.sql(f"CREATE SINK hdr_{out[4:]} FROM {stream} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
           f"(TOPIC '{out}') KEY (id) NOT ENFORCED HEADERS h KEY FORMAT TEXT VALUE FORMAT JSON "
           "ENVELOPE UPSERT", **MZ)
    assert query.wait_for_records(3, 120), query.failure
    got = read_back(broker, out, 3)  # the ksql stream's columns, named as Materialize names them
    assert [r["key"] for r in got] == [b"0", b"1", b"2"]
    assert [r["headers"] for r in got] == [[("trace", f"t{i}".encode())] for i in range(3)]
    assert json.loads(got[0]["value"]) == {"id": 0, "v": "v0", "h": {"trace": "t0", "materialize-x": "dropped"}}
    assert [r["timestamp"] for r in got] == [BASE + i for i in range(3)]

    avro = f"avro-{tag()}"
    query = mz.sql(f"CREATE SINK avro_{avro[5:]} FROM {stream} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
           f"(TOPIC '{avro}') KEY (id) FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY '{registry}' "
           "ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(3, 120), query.failure
    got = read_back(broker, avro, 3)
    key_schema = sr.client(registry).get_latest_version(f"{avro}-key")
    value_schema = sr.client(registry).get_latest_version(f"{avro}-value")
    assert json.loads(key_schema.schema.schema_str)["name"] == "row"
    assert json.loads(value_schema.schema.schema_str)["name"] == "envelope"
    read_key = fastavro.parse_schema(json.loads(key_schema.schema.schema_str))
    read_value = fastavro.parse_schema(json.loads(value_schema.schema.schema_str))
    assert all(r["value"][:5] == b"\0" + value_schema.schema_id.to_bytes(4, "big") for r in got)
    keys = [fastavro.schemaless_reader(io.BytesIO(r["key"][5:]), read_key) for r in got]
    values = [fastavro.schemaless_reader(io.BytesIO(r["value"][5:]), read_value) for r in got]
    assert keys == [{"id": i} for i in range(3)]
    assert [v["before"] for v in values] == [None] * 3  # a stream only inserts
    assert [(v["after"]["id"], v["after"]["v"], v["after"]["h"]["trace"]) for v in values] == [
        (i, f"v{i}", f"t{i}") for i in range(3)]


def test_map_literal_in_a_snapshot_and_as_a_views_headers_column(mz, broker, new_topic):
    """Materialize's `MAP['k' => v, ...]`: text keys, a repeated key's last value, nested maps;
    a view's map column written as the sink's HEADERS."""
    src = upsert_source(mz, broker, new_topic, [("k1", "a"), ("k2", "b")])
    df = mz.sql(f"SELECT id, MAP['a' => 'x', 'id' => id, 'a' => text] AS m, MAP['n' => MAP['v' => 1]], "
                f"MAP['a' => id] -> 'a' AS back FROM {src} ORDER BY id", **MZ)
    assert list(df.columns) == ["id", "m", "map", "back"]
    assert list(df["m"]) == [{"a": "a", "id": "k1"}, {"a": "b", "id": "k2"}]
    assert df["map"][0] == {"n": {"v": 1}} and list(df["back"]) == ["k1", "k2"]
    view = f"v_{tag()}"
    mz.sql(f"CREATE VIEW {view} AS SELECT id, text, MAP['source' => 'web', 'v' => text] AS hs FROM {src}", **MZ)
    out = f"maph-{tag()}"
    query = mz.sql(f"CREATE SINK maph_{out[5:]} FROM {view} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (id) NOT ENFORCED HEADERS hs KEY FORMAT TEXT VALUE FORMAT JSON "
                   "ENVELOPE UPSERT", **MZ)
    assert query.wait_for_records(2, 120), query.failure
    got = read_back(broker, out, 2)
    assert sorted((r["key"], sorted(r["headers"])) for r in got) == [
        (b"k1", [("source", b"web"), ("v", b"a")]), (b"k2", [("source", b"web"), ("v", b"b")])]
    with pytest.raises(ks.KStreamError, match="must have type text"):
        mz.sql(f"SELECT MAP[1 => 'x'] FROM {src}", **MZ)


def test_an_upsert_tombstone_carries_the_deleted_rows_headers(mz, broker, new_topic):
    """Materialize writes a deleted row's HEADERS column on its tombstone: the row that went,
    not the delete record (which has no value)."""
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": None if v is None else json.dumps({"V": v, "H": {"trace": t}}).encode(),
         "timestamp": BASE + n} for n, (i, v, t) in enumerate([(0, "a", "t0"), (1, "b", "t1"), (0, None, None)])])
    table = f"T_{tag().upper()}"
    mz.sql(f"CREATE TABLE {table} (ID INT PRIMARY KEY, V STRING, H MAP<STRING, STRING>) "
           f"WITH (kafka_topic='{topic}', value_format='JSON');")
    out = f"tomb-{tag()}"
    query = mz.sql(f"CREATE SINK tomb_{out[5:]} FROM {table} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (id) HEADERS h KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert query.wait_for_records(3, 120), query.failure
    got = read_back(broker, out, 3)
    records = [(r["key"], r["value"] and json.loads(r["value"]), r["headers"]) for r in got]
    assert [r for r in records if r[1] is None] == [(b"0", None, [("trace", b"t0")])]  # the deleted row's headers
    assert sorted((r for r in records if r[1] is not None), key=str) == [
        (b"0", {"id": 0, "v": "a", "h": {"trace": "t0"}}, [("trace", b"t0")]),
        (b"1", {"id": 1, "v": "b", "h": {"trace": "t1"}}, [("trace", b"t1")])]


def test_json_sinks_write_bytea_as_byte_arrays_and_jsonb_as_json(mz, broker, new_topic):
    """Materialize's JSON writes a bytea as an array of its bytes' values, at any depth, and a
    jsonb column (FORMAT JSON's `data`) as the JSON value itself, not as a string of its text."""
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": struct.pack(">i", 0), "value": json.dumps(
        {"B": "dDU=", "BL": ["Yg==", ""], "BM": {"a": "Yg=="}}).encode(), "timestamp": BASE}])
    stream = f"S_{tag().upper()}"
    mz.sql(f"CREATE STREAM {stream} (ID INT KEY, B BYTES, BL ARRAY<BYTES>, BM MAP<STRING, BYTES>) "
           f"WITH (kafka_topic='{topic}', value_format='JSON');")
    out = f"byt-{tag()}"
    query = mz.sql(f"CREATE SINK byt_{out[4:]} FROM {stream} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (id) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert query.wait_for_records(1, 120), query.failure
    (got,) = read_back(broker, out, 1)
    assert json.loads(got["value"]) == {"id": 0, "b": [116, 53], "bl": [[98], []], "bm": {"a": [98]}}

    docs = new_topic()
    produce(broker.bootstrap_servers, docs, [{"value": b'{"n": 1, "tags": ["x"]}'}, {"value": b'"text"'}])
    source = f"docs_{tag()}"
    mz.sql(f"CREATE SOURCE {source} FROM KAFKA TOPIC '{docs}' FORMAT JSON", **MZ)
    out = f"jsb-{tag()}"
    query = mz.sql(f"CREATE SINK jsb_{out[4:]} FROM {source} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(2, 120), query.failure
    values = [json.loads(r["value"]) for r in read_back(broker, out, 2)]
    assert sorted(values, key=str) == sorted([{"before": None, "after": {"data": {"n": 1, "tags": ["x"]}}},
                                              {"before": None, "after": {"data": "text"}}], key=str)  # not '"text"'


def test_an_avro_sink_writes_include_offset_as_materializes_uint8(mz, broker, new_topic, registry):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"value": v.encode(), "partition": 0} for v in ("a", "b")])
    source = f"offs_{tag()}"
    mz.sql(f"CREATE SOURCE {source} FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE OFFSET AS o", **MZ)
    out = f"u8-{tag()}"
    query = mz.sql(f"CREATE SINK u8_{out[3:]} FROM {source} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY '{registry}' ENVELOPE DEBEZIUM",
                   **MZ)
    assert query.wait_for_records(2, 120), query.failure
    schema = json.loads(sr.client(registry).get_latest_version(f"{out}-value").schema.schema_str)
    row = schema["fields"][0]["type"][1]
    assert [f["type"] for f in row["fields"]] == [["null", "string"], [
        "null", {"type": "fixed", "size": 8, "name": "com.materialize.sink.uint8"}]]
    read = fastavro.parse_schema(schema)
    values = [fastavro.schemaless_reader(io.BytesIO(r["value"][5:]), read) for r in read_back(broker, out, 2)]
    assert sorted((v["after"]["text"], v["after"]["o"]) for v in values) == [
        ("a", (0).to_bytes(8, "big")), ("b", (1).to_bytes(8, "big"))]


def test_an_avro_debezium_sinks_schema_is_materializes(mz, broker, registry):
    """As Materialize registers it (its checks' comment.py and sink tests): a doc on the `row`
    record, not on the envelope; no defaults without NULL DEFAULTS, on `before`/`after` or a field."""
    t, out = f"dz_{tag()}", f"dz-{tag()}"
    mz.sql(f"CREATE CONNECTION csr_{t} TO CONFLUENT SCHEMA REGISTRY (URL '{registry}');"
           f"CREATE TABLE {t} (f3 int); INSERT INTO {t} VALUES (1)", **MZ)
    query = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') "
                   f"FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_{t} (DOC ON TYPE {t} = 'the table') "
                   "ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(1, 120), query.failure
    assert json.loads(sr.client(registry).get_latest_version(f"{out}-value").schema.schema_str) == {
        "type": "record", "name": "envelope", "fields": [
            {"name": "before", "type": ["null", {"type": "record", "name": "row", "doc": "the table", "fields": [
                {"name": "f3", "type": ["null", "int"]}]}]},
            {"name": "after", "type": ["null", "row"]}]}


def test_an_avro_sink_names_a_record_column_as_materialize_does_and_writes_it(mz, broker, registry):
    t, out = f"rc_{tag()}", f"rc-{tag()}"
    mz.sql(f"CREATE TYPE pt_{t} AS (x text, y int); CREATE TABLE {t} (a pt_{t}, b pt_{t}, n int);"
           f"INSERT INTO {t} VALUES (ROW('p', 1), NULL, 7)", **MZ)
    query = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') "
                   f"FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY '{registry}' ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(1, 120), query.failure
    schema = json.loads(sr.client(registry).get_latest_version(f"{out}-value").schema.schema_str)
    row = schema["fields"][0]["type"][1]
    assert [f["type"] for f in row["fields"]] == [
        ["null", {"type": "record", "name": "record0", "namespace": "com.materialize.sink", "fields": [
            {"name": "x", "type": ["null", "string"]}, {"name": "y", "type": ["null", "int"]}]}],
        ["null", "com.materialize.sink.record0"], ["null", "int"]]
    (record,) = read_back(broker, out, 1)
    value = fastavro.schemaless_reader(io.BytesIO(record["value"][5:]), fastavro.parse_schema(schema))
    assert value == {"before": None, "after": {"a": {"x": "p", "y": 1}, "b": None, "n": 7}}


def test_a_sink_is_replayed_from_the_command_topic_and_resumes_from_its_checkpoint(broker, spark, new_topic,
                                                                                   tmp_path):
    service, state, topic = f"mzsink{tag()}", str(tmp_path / "state"), new_topic()
    out = f"replay-{tag()}"

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service)

    def send(first, count):
        produce(broker.bootstrap_servers, topic, [{"key": f"k{i}".encode(), "value": f"v{i}".encode(),
                                                   "timestamp": BASE + i} for i in range(first, first + count)])

    send(0, 2)
    first = connect()
    first.sql(f"CREATE SOURCE src FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY AS id "
              f"ENVELOPE UPSERT; CREATE SINK snk FROM src INTO KAFKA BROKER '{broker.bootstrap_servers}' "
              f"(TOPIC '{out}') KEY (id) FORMAT JSON ENVELOPE UPSERT", **MZ)
    query = first.persistent.queries[first.sinks["snk"].query_id]
    assert query.wait_for_records(2, 120), query.failure
    first.stop()  # the queries stop, their checkpoints stay, as when a kernel ends

    send(2, 2)
    second = connect()
    assert second.sinks["snk"].query_id == query.id  # same id, so the same checkpoint
    resumed = second.persistent.queries[query.id]
    assert resumed.wait_for_records(2, 120), resumed.failure
    deadline, texts = time.monotonic() + 60, []
    while set(texts) != {"v0", "v1", "v2", "v3"} and time.monotonic() < deadline:
        texts = [json.loads(r["value"])["text"] for r in fetch_records(
            broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=2, until_end=False)]
    assert set(texts) == {"v0", "v1", "v2", "v3"}  # nothing lost
    assert (texts.count("v2"), texts.count("v3")) == (1, 1)  # resumed after its checkpoint, not from the start
    assert second.sql("SHOW SINKS", **MZ).name.tolist() == ["snk"]
    second.sql("DROP SINK snk", **MZ)
    second.stop()

    third = connect()
    assert third.sql("SHOW SINKS", **MZ).empty and not third.persistent.queries  # a dropped sink stays dropped
    third.stop()


def test_a_debezium_sink_pairs_before_images_across_a_restart(broker, spark, new_topic, tmp_path):
    """The key's previous rows are keyed state in the query's checkpoint: a sink restarted with an
    empty driver (a new session, as after a kernel restart) still writes the right `before`."""
    service, state, topic = f"mzdbz{tag()}", str(tmp_path / "state"), new_topic()
    out = f"dbzr-{tag()}"

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service)

    produce(broker.bootstrap_servers, topic, [{"key": b"k1", "value": b"a"}, {"key": b"k2", "value": b"x"}])
    first = connect()
    query = first.sql(f"CREATE SOURCE src FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                      f"INCLUDE KEY AS id ENVELOPE UPSERT; CREATE SINK snk FROM src INTO KAFKA BROKER "
                      f"'{broker.bootstrap_servers}' (TOPIC '{out}') FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
    assert query.wait_for_records(2, 120), query.failure
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(query.checkpoint, "commits", "0")) and time.monotonic() < deadline:
        time.sleep(0.2)
    first.stop()

    produce(broker.bootstrap_servers, topic, [{"key": b"k1", "value": b"b"}, {"key": b"k2", "value": None}])
    second = connect()
    resumed = second.persistent.queries[query.id]
    assert resumed.wait_for_records(2, 120), resumed.failure
    got = read_back(broker, out, 4)
    values = [json.loads(r["value"]) for r in got]
    assert values[2:] == [{"before": {"id": "k1", "text": "a"}, "after": {"id": "k1", "text": "b"}},
                          {"before": {"id": "k2", "text": "x"}, "after": None}] or values[2:] == [
        {"before": {"id": "k2", "text": "x"}, "after": None},
        {"before": {"id": "k1", "text": "a"}, "after": {"id": "k1", "text": "b"}}]
    assert not os.path.exists(os.path.join(query.checkpoint, "debezium_rows"))  # no frames beside it
    assert os.path.isdir(os.path.join(query.checkpoint, "state"))  # Spark's state store
    with open(os.path.join(query.checkpoint, "layout.json"), encoding="utf-8") as handle:
        assert json.load(handle)["hash buckets"] == {"sink's previous rows": "last row per key in keyed state"}
    second.stop()


def test_debezium_pairs_consolidate_then_zip_a_keys_retractions_with_its_insertions(spark):
    """Materialize's pairing on a batch of diffs: equal rows at one time summed (bob's -1 and +1
    vanish), then per key and time the n-th retraction with the n-th insertion in the rows'
    order; a diff of 2 is two records (without a key nothing pairs: the join sink tests)."""
    from pyspark.sql import functions as F

    from kafkasql_magic.engine.columns import RAW_TIMESTAMP
    from kafkasql_magic.sinks.diff_rows import AFTER, BEFORE, debezium_pairs

    rows = spark.createDataFrame(
        [(2000, -1, "ann", "Oslo"), (2000, 1, "ann", "Rome"), (2000, 1, "ann", "Bergen"), (2001, -1, "ann", "Rome"),
         (2001, 1, "bob", "X"), (2001, -1, "bob", "X"), (2002, 2, "cy", "Y")],
        "t long, d long, who string, city string").withColumn(RAW_TIMESTAMP, F.timestamp_millis("t"))
    row = F.struct(F.col("who").alias("who"), F.col("city").alias("city"))

    key = F.struct(F.col("who").alias("who"))
    got = [tuple(r) for r in debezium_pairs(rows, F.col("d"), F.col("t"), row, key).select(
        F.unix_millis(RAW_TIMESTAMP), F.col(BEFORE)["city"], F.col(AFTER)["city"]).collect()]
    assert sorted(got, key=str) == sorted([(2000, None, "Rome"), (2000, "Oslo", "Bergen"), (2001, "Rome", None),
                                           (2002, None, "Y"), (2002, None, "Y")], key=str)
    ann = [t for t, before, after in got if (before or after) != "Y"]
    assert ann == sorted(ann)  # a key's records in time order


def test_a_row_leaving_a_views_where_is_a_tombstone_of_an_upsert_sink(mz, broker, new_topic):
    """Materialize: an UPSERT source's row updated so that the view's WHERE rejects it leaves the
    view (a tombstone); a row the view never held writes nothing when it goes."""
    src = upsert_source(mz, broker, new_topic, [("k1", "a"), ("k2", "b"), ("k3", "skip")])
    mz.sql(f"CREATE VIEW v_{src} AS SELECT id, text FROM {src} WHERE text <> 'skip'", **MZ)
    out = f"out-{tag()}"
    query = mz.sql(f"CREATE SINK snk_{out[4:]} FROM v_{src} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                   f"(TOPIC '{out}') KEY (id) FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert query.wait_for_records(2, 120), query.failure
    topic = mz.catalog.get(src).topic
    produce(broker.bootstrap_servers, topic, [{"key": b"k1", "value": b"skip", "timestamp": BASE + 10},
                                              {"key": b"k3", "value": None, "timestamp": BASE + 11},
                                              {"key": b"k2", "value": b"c", "timestamp": BASE + 12}])
    assert query.wait_for_records(6, 120), query.failure  # the relation's rows, k3's two included
    records = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=30,
                            until_end=True)
    got = [(json.loads(r["key"]), r["value"] and json.loads(r["value"])) for r in records]
    assert sorted(got, key=lambda kv: kv[0]["id"]) == [  # k3, never in the view, writes nothing
        ({"id": "k1"}, {"id": "k1", "text": "a"}), ({"id": "k1"}, None),
        ({"id": "k2"}, {"id": "k2", "text": "b"}), ({"id": "k2"}, {"id": "k2", "text": "c"})]
