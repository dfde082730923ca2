"""Materialize's sink options after TOPIC, as its own `kafka-sink-partition-by.td` uses them:
PARTITION BY (a hash cast to uint8, modulo the partition count; NULL, a failure or a value out of
range to partition 0), TOPIC PARTITION COUNT / REPLICATION FACTOR / CONFIG for a topic the sink
makes, and COMPRESSION TYPE. Each topic is read back record by record with its partition."""

from __future__ import annotations

import json
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka import admin
from kafkasql_magic.kafka.peek import fetch_records


def tag() -> str:
    return uuid.uuid4().hex[:8]


def placed(broker, topic, count, timeout=60) -> list[tuple]:
    """(key, value, partition) of the first `count` records, sorted (as `sort-messages=true`)."""
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=timeout,
                        until_end=False)
    assert len(got) == count, got
    decode = (lambda b: None if b is None else json.loads(b))
    return sorted(((decode(r["key"]), decode(r["value"]), r["partition"]) for r in got), key=repr)


@pytest.fixture
def mz(broker, spark, tmp_path):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                   state_dir=str(tmp_path / "state"), dialect="materialize")
    yield s
    s.stop()


def test_partition_by_places_each_record_by_its_hash_modulo_the_partition_count(mz, broker):
    t, out = f"p_{tag()}", f"direct-{tag()}"
    mz.sql(f"CREATE TABLE {t} (part int, value text);"
           f"INSERT INTO {t} VALUES (0, 'apple'), (1, 'banana'), (2, 'grape'), (3, 'orange'), (0, 'zucchini'),"
           f" (NULL, 'none'), (-1, 'negative')")
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                  f"(TOPIC '{out}', TOPIC PARTITION COUNT 2, PARTITION BY part) "
                  "KEY (value) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    assert sink.wait_for_records(7, 120), sink.failure
    assert len(admin.topic_partitions(broker.bootstrap_servers, out)) == 2
    assert [(v["value"], p) for _, v, p in placed(broker, out, 7)] == sorted([
        ("apple", 0), ("banana", 1), ("grape", 0), ("orange", 1), ("zucchini", 0),
        ("none", 0), ("negative", 0)], key=lambda x: repr(({"value": x[0]},)))  # NULL and -1: partition 0


def test_kafka_murmur2_places_records_as_kafkas_partitioner_and_deletes_follow_their_rows(mz, broker):
    t, out = f"h_{tag()}", f"hashed-{tag()}"
    mz.sql(f"CREATE TABLE {t} (value text);"
           f"INSERT INTO {t} VALUES ('apple'), ('banana'), ('grape'), ('orange'), ('zucchini')")
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                  f"(TOPIC '{out}', TOPIC PARTITION COUNT 16, PARTITION BY kafka_murmur2(value), "
                  "COMPRESSION TYPE zstd) KEY (value) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    assert sink.wait_for_records(5, 120), sink.failure
    mz.sql(f"DELETE FROM {t} WHERE value IN ('banana', 'orange')")
    assert sink.wait_for_records(7, 120), sink.failure
    got = placed(broker, out, 7)
    where = {k["value"]: p for k, v, p in got if v is not None}
    assert where == {"apple": 5, "banana": 13, "grape": 5, "orange": 8, "zucchini": 4}  # kcat's murmur2_random
    assert sorted((k["value"], p) for k, v, p in got if v is None) == [("banana", 13), ("orange", 8)]


def test_a_failing_partition_by_sends_the_record_to_partition_0(mz, broker):
    t, out = f"f_{tag()}", f"invalid-{tag()}"
    mz.sql(f"CREATE TABLE {t} (a int, b int); INSERT INTO {t} VALUES (2, 1), (-1, 1), (1, 0), (1, 1)")
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                  f"(TOPIC '{out}', TOPIC PARTITION COUNT 4, PARTITION BY a / b) "
                  "KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    assert sink.wait_for_records(4, 120), sink.failure
    assert sorted((v["a"], v["b"], p) for _, v, p in placed(broker, out, 4)) == [
        (-1, 1, 0), (1, 0, 0), (1, 1, 1), (2, 1, 2)]


def test_partition_by_with_debezium_keeps_an_update_and_a_delete_in_their_keys_partition(mz, broker):
    t, out = f"d_{tag()}", f"debezium-{tag()}"
    mz.sql(f"CREATE TABLE {t} (k int, v text)")
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                  f"(TOPIC '{out}', TOPIC PARTITION COUNT 2, PARTITION BY k) "
                  "KEY (k) NOT ENFORCED FORMAT JSON ENVELOPE DEBEZIUM")
    mz.sql(f"INSERT INTO {t} VALUES (0, 'apple'), (1, 'banana')")
    assert sink.wait_for_records(2, 120), sink.failure
    mz.sql(f"UPDATE {t} SET v = v || 's'")
    assert sink.wait_for_records(4, 120), sink.failure
    mz.sql(f"DELETE FROM {t}")
    assert sink.wait_for_records(6, 120), sink.failure
    assert {(k["k"], p) for k, _, p in placed(broker, out, 6)} == {(0, 0), (1, 1)}


def test_topic_options_make_the_topic_and_bad_options_are_refused_in_materializes_words(mz, broker):
    t, bootstrap = f"o_{tag()}", broker.bootstrap_servers
    mz.sql(f"CREATE TABLE {t} (a int, b int, d date)")

    def refused(options: str, match: str, envelope: str = "UPSERT"):
        with pytest.raises(ks.KStreamError, match=match):
            mz.sql(f"CREATE SINK bad_{t} FROM {t} INTO KAFKA BROKER '{bootstrap}' (TOPIC 'bad-{tag()}', {options}) "
                   f"KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE {envelope}")

    refused("PARTITION BY d", "PARTITION BY does not support casting from date to uint8")
    refused("PARTITION BY noexist", 'column "noexist" does not exist')
    refused("PARTITION BY b", 'PARTITION BY expression cannot refer to non-key column "b"', "DEBEZIUM")
    refused("COMPRESSION TYPE brotli", "invalid COMPRESSION TYPE: brotli")
    refused("TOPIC PARTITION COUNT 0", "invalid TOPIC PARTITION COUNT")
    refused("TOPIC PARTITION COUNT 2, TOPIC PARTITION COUNT 3", "TOPIC PARTITION COUNT specified more than once")

    out = f"made-{tag()}"
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{out}', "
                  "TOPIC PARTITION COUNT 3, TOPIC REPLICATION FACTOR 1, TOPIC CONFIG MAP['retention.ms' => '86400000'], "
                  "COMPRESSION TYPE 'gzip') KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    mz.sql(f"INSERT INTO {t} VALUES (1, 2, '2024-01-01')")
    assert sink.wait_for_records(1, 120), sink.failure
    assert len(admin.topic_partitions(bootstrap, out)) == 3
    assert placed(broker, out, 1)[0][1] == {"a": 1, "b": 2, "d": "2024-01-01"}
    shown = mz.sql(f"SHOW CREATE SINK s_{t}")
    assert "TOPIC PARTITION COUNT 3" in shown["create_sql"][0] and "COMPRESSION TYPE 'gzip'" in shown["create_sql"][0]


def test_snapshot_false_writes_only_the_changes_after_the_sink_is_created(mz, broker):
    t, bootstrap = f"n_{tag()}", broker.bootstrap_servers
    mz.sql(f"CREATE TABLE {t} (k int, v text); INSERT INTO {t} VALUES (1, 'before'), (2, 'kept')")
    upsert, debezium = f"nosnap-{tag()}", f"nosnap-dbz-{tag()}"
    sinks = [mz.sql(f"CREATE SINK s{i}_{t} FROM {t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{out}') "
                    f"KEY (k) NOT ENFORCED FORMAT JSON ENVELOPE {envelope} WITH (SNAPSHOT = false)")
             for i, (out, envelope) in enumerate([(upsert, "UPSERT"), (debezium, "DEBEZIUM")])]
    mz.sql(f"INSERT INTO {t} VALUES (3, 'after'); UPDATE {t} SET v = 'changed' WHERE k = 1")
    for sink in sinks:
        assert sink.wait_for_records(2, 120), sink.failure
    assert placed(broker, upsert, 2) == sorted([({"k": 1}, {"k": 1, "v": "changed"}, 0),
                                                ({"k": 3}, {"k": 3, "v": "after"}, 0)], key=repr)
    # the row held before the sink is the update's `before`: read, not written
    assert placed(broker, debezium, 2) == sorted([
        ({"k": 1}, {"before": {"k": 1, "v": "before"}, "after": {"k": 1, "v": "changed"}}, 0),
        ({"k": 3}, {"before": None, "after": {"k": 3, "v": "after"}}, 0)], key=repr)
    assert "WITH (SNAPSHOT = false)" in mz.sql(f"SHOW CREATE SINK s0_{t}")["create_sql"][0]
    with pytest.raises(ks.KStreamError, match='Expected SNAPSHOT, found identifier "size"'):
        mz.sql(f"CREATE SINK bad_{t} FROM {t} INTO KAFKA BROKER '{bootstrap}' (TOPIC 'x') "
               "KEY (k) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT WITH (SIZE = true)")


def test_avro_fullnames_docs_and_null_defaults_shape_the_registered_schemas(mz, broker):
    import io

    import fastavro

    from kafkasql_magic.formats import schema_registry as sr

    t, out, url = f"a_{tag()}", f"named-{tag()}", broker.endpoints["schema.registry.url"]
    mz.sql(f"CREATE CONNECTION csr_{t} TO CONFLUENT SCHEMA REGISTRY (URL '{url}');"
           f"CREATE TABLE {t} (k int, v text); INSERT INTO {t} VALUES (1, 'one')")
    options = ("AVRO KEY FULLNAME 'com.example.Key' AVRO VALUE FULLNAME 'com.example.Value', NULL DEFAULTS, "
               f"DOC ON TYPE {t} = 'both records', KEY DOC ON COLUMN {t}.k = 'k in the key', "
               f"DOC ON COLUMN {t}.k = 'k in the value', VALUE DOC ON COLUMN {t}.v = 'v'")
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') "
                  f"KEY (k) NOT ENFORCED FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_{t} ({options}) "
                  "ENVELOPE UPSERT")
    assert sink.wait_for_records(1, 120), sink.failure
    key_schema, value_schema = (json.loads(sr.client(url).get_latest_version(f"{out}-{role}").schema.schema_str)
                                for role in ("key", "value"))
    assert key_schema == {"type": "record", "name": "com.example.Key", "doc": "both records", "fields": [
        {"name": "k", "type": ["null", "int"], "doc": "k in the key", "default": None}]}
    assert value_schema == {"type": "record", "name": "com.example.Value", "doc": "both records", "fields": [
        {"name": "k", "type": ["null", "int"], "doc": "k in the value", "default": None},
        {"name": "v", "type": ["null", "string"], "doc": "v", "default": None}]}
    (record,) = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=1, timeout_s=60,
                              until_end=False)
    read = (lambda b, s: fastavro.schemaless_reader(io.BytesIO(b[5:]), fastavro.parse_schema(s)))
    assert (read(record["key"], key_schema), read(record["value"], value_schema)) == ({"k": 1}, {"k": 1, "v": "one"})
    with pytest.raises(ks.KStreamError, match="Must specify both AVRO KEY FULLNAME and AVRO VALUE FULLNAME"):
        mz.sql(f"CREATE SINK bad_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC 'x') "
               f"KEY (k) NOT ENFORCED FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_{t} "
               "(AVRO VALUE FULLNAME 'v') ENVELOPE UPSERT")


def test_compatibility_levels_are_set_on_subjects_that_have_none(mz, broker):
    """KEY / VALUE COMPATIBILITY LEVEL: each subject gets its level before the schema is
    registered, unless the subject has a level of its own already (Materialize sets it only then)."""
    from kafkasql_magic.formats import schema_registry as sr

    t, out, url = f"c_{tag()}", f"levels-{tag()}", broker.endpoints["schema.registry.url"]
    client = sr.client(url)
    client.set_compatibility(f"{out}-key", "FORWARD")  # the key subject's own level stays
    mz.sql(f"CREATE CONNECTION csr_{t} TO CONFLUENT SCHEMA REGISTRY (URL '{url}');"
           f"CREATE TABLE {t} (k int, v text); INSERT INTO {t} VALUES (1, 'one')")
    into = f"INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') KEY (k) NOT ENFORCED"
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} {into} FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION "
                  f"csr_{t} (KEY COMPATIBILITY LEVEL 'NONE', VALUE COMPATIBILITY LEVEL 'FULL_TRANSITIVE') "
                  "ENVELOPE UPSERT")
    assert sink.wait_for_records(1, 120), sink.failure
    assert (client.get_compatibility(f"{out}-key"), client.get_compatibility(f"{out}-value")) == (
        "FORWARD", "FULL_TRANSITIVE")
    assert "VALUE COMPATIBILITY LEVEL 'FULL_TRANSITIVE'" in mz.sql(f"SHOW CREATE SINK s_{t}")["create_sql"][0]
    with pytest.raises(ks.KStreamError, match="^invalid compatibility level: backward$"):
        mz.sql(f"CREATE SINK bad_{t} FROM {t} {into} FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION "
               f"csr_{t} (VALUE COMPATIBILITY LEVEL 'backward') ENVELOPE UPSERT")


def test_comments_show_in_show_columns_and_become_a_sinks_avro_docs(mz, broker):
    """COMMENT ON as Materialize's checks (all_checks/comment.py) use it: the table's and its
    columns' comments are the docs of a sink created after them (a DOC ON of the statement wins),
    SHOW COLUMNS and SHOW TABLES show them, IS NULL removes one."""
    from kafkasql_magic.formats import schema_registry as sr

    t, out, url = f"cm_{tag()}", f"commented-{tag()}", broker.endpoints["schema.registry.url"]
    mz.sql(f"CREATE CONNECTION csr_{t} TO CONFLUENT SCHEMA REGISTRY (URL '{url}');"
           f"CREATE TABLE {t} (f1 int, f2 text); INSERT INTO {t} VALUES (1, 'a');"
           f"COMMENT ON TABLE {t} IS 'comment on the table';"
           f"COMMENT ON COLUMN {t}.f1 IS 'comment on f1'; COMMENT ON COLUMN {t}.f2 IS 'comment on f2'")
    columns = mz.sql(f"SHOW COLUMNS FROM {t}")
    assert dict(zip(columns.name, columns.comment)) == {"f1": "comment on f1", "f2": "comment on f2"}
    tables = mz.sql("SHOW TABLES")
    assert dict(zip(tables.name, tables.comment))[t] == "comment on the table"
    sink = mz.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') "
                  f"FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_{t} "
                  f"(VALUE DOC ON COLUMN {t}.f2 = 'given') ENVELOPE DEBEZIUM")
    assert sink.wait_for_records(1, 120), sink.failure
    schema = json.loads(sr.client(url).get_latest_version(f"{out}-value").schema.schema_str)
    row = schema["fields"][0]["type"][1]
    assert (row.get("doc"), [f.get("doc") for f in row["fields"]]) == ("comment on the table", ["comment on f1", "given"])
    mz.sql(f"COMMENT ON COLUMN {t}.f1 IS NULL")
    assert list(mz.sql(f"SHOW COLUMNS FROM {t}").comment) == ["", "comment on f2"]
    with pytest.raises(ks.KStreamError, match=f"^unknown catalog item 'nope_{t}'$"):
        mz.sql(f"COMMENT ON TABLE nope_{t} IS 'x'")
    with pytest.raises(ks.KStreamError, match=f'^"materialize.public.{t}" is a table not a view$'):
        mz.sql(f"COMMENT ON VIEW {t} IS 'x'")
    with pytest.raises(ks.KStreamError, match=f'^column "{t}.nope" does not exist$'):
        mz.sql(f"COMMENT ON COLUMN {t}.nope IS 'x'")
