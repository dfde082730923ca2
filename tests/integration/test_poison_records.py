"""Poison records never fail a query: bytes that are not UTF-8 text, in keys, values and headers,
in every text format and both dialects, are logged with their offsets and the good records
around them are all delivered."""

from __future__ import annotations

import json
import uuid

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}
NOT_UTF8 = b"caf\xe9 \xff\xfe"  # Latin-1 text and bytes no UTF-8 text has


def write(broker, records: list[dict]) -> str:
    topic = f"poison_{uuid.uuid4().hex[:10]}"
    produce(broker.bootstrap_servers, topic, [{**r, "partition": 0} for r in records], create_partitions=1)
    return topic


def logged(session, topic) -> list[tuple[int, str]]:
    log = session.processing_log()
    mine = log[log.TOPIC == topic].sort_values("OFFSET")
    return list(zip(mine.OFFSET.tolist(), mine.MESSAGE.tolist()))


def interleaved(good: list[bytes], bad: bytes, field: str = "value") -> list[dict]:
    """good[0], bad, good[1], bad, ...: bad records at the odd offsets."""
    out = []
    for g in good:
        out += [{field: g}, {field: bad}]
    return out[:-1]


GOOD_TEXT = [f"record {i} \u00e9\u4e2d".encode() for i in range(6)]


@pytest.mark.parametrize("value_format, good, bad, expected", [
    ("KAFKA", GOOD_TEXT, NOT_UTF8, [g.decode() for g in GOOD_TEXT]),
    ("JSON", [json.dumps({"v": g.decode()}).encode() for g in GOOD_TEXT],
     b'{"v": "' + NOT_UTF8 + b'"}', [g.decode() for g in GOOD_TEXT]),
    ("DELIMITED", GOOD_TEXT, NOT_UTF8, [g.decode() for g in GOOD_TEXT]),
])
def test_value_not_utf8_is_logged_and_skipped(session, broker, value_format, good, bad, expected):
    topic = write(broker, interleaved(good, bad))
    wrap = ", wrap_single_value=false" if value_format == "KAFKA" else ""
    session.sql(f"CREATE STREAM s (v STRING) WITH (kafka_topic='{topic}', value_format='{value_format}'{wrap});")
    snapshot = session.sql("SELECT v FROM s;")
    assert snapshot.V.tolist() == expected
    live = session.sql(f"SELECT v, ROWOFFSET AS o FROM s EMIT CHANGES LIMIT {len(good)};")
    assert live.V.tolist() == expected and live.O.tolist() == list(range(0, 2 * len(good), 2))
    entries = logged(session, topic)
    bad_offsets = list(range(1, 2 * len(good) - 1, 2))
    assert sorted({o for o, _ in entries}) == bad_offsets  # each bad record logged (by both queries)
    assert all("Failed to deserialize value: Invalid UTF-8" in m for _, m in entries)


def test_key_not_utf8_is_logged_and_skipped(session, broker):
    records = [{"key": b"k%d" % i, "value": b'{"v": %d}' % i} for i in range(4)]
    records.insert(2, {"key": NOT_UTF8, "value": b'{"v": 99}'})
    topic = write(broker, records)
    session.sql(f"CREATE STREAM s (k STRING KEY, v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql("SELECT k, v FROM s EMIT CHANGES LIMIT 4;")
    assert rows.K.tolist() == ["k0", "k1", "k2", "k3"] and rows.V.tolist() == [0, 1, 2, 3]
    assert [(o, m.split(":")[0]) for o, m in logged(session, topic)] == [(2, "Failed to deserialize key")]


def test_header_not_utf8_is_null_and_logged(session, broker):
    records = [{"value": b'{"v": %d}' % i, "headers": [("h", b"hdr %d" % i)]} for i in range(4)]
    records[1]["headers"] = [("h", NOT_UTF8)]
    topic = write(broker, records)
    session.sql(f"CREATE STREAM s (v INT, h BYTES HEADER('h')) WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql("SELECT v, FROM_BYTES(h, 'utf8') AS t FROM s EMIT CHANGES LIMIT 4;")
    assert rows.V.tolist() == [0, 1, 2, 3]  # the record stays; its text is NULL, not invented
    assert rows["T"].tolist() == ["hdr 0", None, "hdr 2", "hdr 3"]
    entries = logged(session, topic)
    assert [o for o, _ in entries] == [1] and "not valid utf8" in entries[0][1]


@pytest.mark.parametrize("fmt, good, bad, column", [
    ("TEXT", GOOD_TEXT, NOT_UTF8, "text"),
    ("JSON", [json.dumps({"v": g.decode()}).encode() for g in GOOD_TEXT], b'{"v": "' + NOT_UTF8 + b'"}', "data"),
    ("CSV WITH 1 COLUMNS", GOOD_TEXT, NOT_UTF8, "column1"),
])
def test_materialize_sources_fail_on_text_that_is_not_utf8_naming_it(session, broker, fmt, good, bad, column):
    """Materialize puts such a source into an error state: the snapshot fails naming the first
    bad record (each is in the processing log); the good records are still read by dataframe()."""
    topic = write(broker, interleaved(good, bad))
    session.sql(f"CREATE SOURCE m FROM KAFKA TOPIC '{topic}' FORMAT {fmt}", **MZ)
    with pytest.raises(StatementError) as info:
        session.sql("SELECT * FROM m", **MZ)
    assert "UTF-8" in str(info.value) and str(info.value).endswith(f"(topic {topic}, partition 0, offset 1)")
    assert [o for o, _ in logged(session, topic)] == list(range(1, 2 * len(good) - 1, 2))
    assert session.dataframe("SELECT * FROM m", **MZ).count() == len(good)


def test_avro_string_not_utf8_is_logged(spark, broker, registry):
    """AVRO strings are read strictly: a string field with non-UTF-8 bytes is a logged error."""
    import io

    import kafkasql_magic as ks

    import fastavro
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    schema = {"type": "record", "name": "V", "fields": [{"name": "s", "type": "string"}]}
    topic = f"poison_{uuid.uuid4().hex[:10]}"
    sid = SchemaRegistryClient({"url": registry}).register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))

    def framed(raw: bytes) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema({"type": "bytes"}), raw)  # same wire form as string
        return b"\x00" + sid.to_bytes(4, "big") + out.getvalue()

    values = [framed(b"ok %d" % i) for i in range(3)]
    values.insert(1, framed(NOT_UTF8))
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": 0} for v in values], create_partitions=1)
    session = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry,
                         timeout=90)
    session.sql("SET 'auto.offset.reset'='earliest';")
    session.sql(f"CREATE STREAM a WITH (kafka_topic='{topic}', value_format='AVRO');")
    assert session.sql("SELECT s FROM a EMIT CHANGES LIMIT 3;").S.tolist() == ["ok 0", "ok 1", "ok 2"]
    assert [o for o, _ in logged(session, topic)] == [1]


def test_only_failed_records_carry_their_bytes_to_the_driver(session, broker):
    """What a query collects: its result columns, and raw key and value bytes (as bytes, never
    base64 text) only for the records that failed; never the input record's headers. A
    HEADER('h') source reads only that key's last header."""
    import pyarrow as pa

    from kafkasql_magic.engine.columns import OFFSET, RAW_HEADERS, RAW_KEY, RAW_VALUE, result_column
    from kafkasql_magic.results import collectable
    from kafkasql_magic.engine.api import prepare

    records = [{"key": b"k0", "value": b'{"v": 1}', "headers": [("h", b"x"), ("o", b"y"), ("h", b"z")]},
               {"key": b"k1", "value": b'{"v": '},
               {"key": b"k2", "value": b'{"v": 3}'}]
    topic = write(broker, records)
    session.sql(f"CREATE STREAM s (k STRING KEY, v INT, h BYTES HEADER('h')) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    (stmt, _), = session._statements("SELECT k, v, h FROM s;", session.dialect_now)
    prepared = prepare(session, stmt)
    assert prepared.read.options()["headerKeys"] == '["h"]'
    table = collectable(prepared.built.frame, len(prepared.plan.names)).toArrow().sort_by(OFFSET)
    assert table.column(RAW_VALUE).to_pylist() == [None, b'{"v": ', None]
    assert table.column(RAW_KEY).to_pylist() == [None, b"k1", None]
    assert table.schema.field(RAW_KEY).type == table.schema.field(RAW_VALUE).type == pa.binary()
    assert RAW_HEADERS not in table.column_names
    assert table.column(result_column(2)).to_pylist() == [b"z", None, None]
    assert table.column(result_column(1)).to_pylist() == [1, None, 3]
