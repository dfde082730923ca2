"""Which raw columns a read carries (engine.tree.reads, from the operator tree), the source
options saying it, and the reader's Arrow batches built from them; no Spark."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from confluent_kafka import Message

from kafkasql_magic.engine.tree import tree_of
from kafkasql_magic.engine.tree.reads import ALL_METADATA, read_needs
from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import json_columns
from kafkasql_magic.kafka.arrow_batch import METADATA, arrow_schema, to_record_batch
from kafkasql_magic.kafka.source_options import ReadShape, SourceOptions
from kafkasql_magic.kafka.worker_decoding import WorkerDecoding, parse
from kafkasql_magic.engine.api import read_shape

BASE = {"bootstrap.servers": "b:1", "topic": "t"}
PAIRS = (("id", "BIGINT"), ("v", "STRING"))


def _plan(text: str, dialect: str = "ksql", views=()):
    from kafkasql_magic import dialects
    from kafkasql_magic.catalog import Catalog, ViewDef
    from kafkasql_magic.dialects import SourceContext
    from kafkasql_magic.dialects import ksql_sources as ddl
    from kafkasql_magic.engine.analysis import analyse
    from kafkasql_magic.sql import parse_statement

    settings = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}
    cat = Catalog()
    for ddl_text in (
            "CREATE STREAM s (id BIGINT, v STRING, n INT) WITH (kafka_topic='t', value_format='JSON');",
            "CREATE STREAM ks (k STRUCT<k BIGINT> KEY, id BIGINT) WITH (kafka_topic='kt', format='JSON');",
            "CREATE STREAM kk (k INT KEY, id BIGINT) WITH (kafka_topic='kk', value_format='JSON');",
            "CREATE STREAM hs (id BIGINT, h BYTES HEADER('h')) WITH (kafka_topic='t', value_format='JSON');",
            "CREATE TABLE tb (k STRING PRIMARY KEY, id BIGINT) WITH (kafka_topic='tb', value_format='JSON');",
            "CREATE STREAM ds (v STRING) WITH (kafka_topic='d', value_format='DELIMITED');"):
        cat.add(ddl.source_from_create(parse_statement(ddl_text), settings))
    context = SourceContext(settings, None, "", infer=None, latest_schema=None)
    cat.add(dialects.MATERIALIZE.define_source(parse_statement(
        "CREATE SOURCE m FROM KAFKA TOPIC 'm' FORMAT JSON INCLUDE TIMESTAMP AS ts, OFFSET AS o",
        dialect="materialize"), context))
    for name, query in views:
        cat.add(ViewDef(name, parse_statement(query), dialect="ksql"))
    return analyse(parse_statement(text, dialect=dialect), cat, dialect)


def _needs(plan, forwarded: bool = False, written: bool = False):
    """A read of the plan's FROM source (`forwarded`: a persistent query's, headers and all;
    `written`: its rows become output records)."""
    return read_needs(tree_of(plan), plan.source, headers_forwarded=forwarded, records_forwarded=forwarded or written,
                      shown_by_time=plan.push)


def _shape(text: str, *, forwarded: bool = False, views=()) -> ReadShape:
    plan = _plan(text, views=views)
    return read_shape(plan.source, _needs(plan, forwarded))


def _elided(text: str, **kw) -> bool:
    decoding = _shape(text, **kw).decoding
    return bool(decoding and decoding.raw_undecoded_only)


@pytest.mark.parametrize("text", [
    "SELECT id, v FROM s EMIT CHANGES;",
    "SELECT * FROM s;",
    "SELECT id, v FROM s WHERE id > 3 AND v LIKE 'a%' AND n IS NOT NULL EMIT CHANGES LIMIT 2;",
    "SELECT CASE WHEN id > 1 THEN v ELSE 'x' END AS c, id * 2 + 1 AS d, CAST(n AS BIGINT) AS e FROM s;",
    "SELECT k, id FROM ks EMIT CHANGES;",  # a JSON key decoded in the worker too
])
def test_a_plain_query_over_decoded_parts_leaves_the_bytes_out(text):
    assert _elided(text)


@pytest.mark.parametrize("text, why", [
    ("SELECT id / n AS q FROM s EMIT CHANGES;", "division by zero fails a record"),
    ("SELECT id % n AS q FROM s EMIT CHANGES;", "modulo by zero fails a record"),
    ("SELECT UCASE(v) AS u FROM s EMIT CHANGES;", "a function may fail a record"),
    ("SELECT CAST(id AS STRING) AS t FROM s EMIT CHANGES;", "a dialect's text cast may fail"),
    ("SELECT id FROM s WHERE ABS(n) > 1 EMIT CHANGES;", "WHERE may fail a record"),
    ("SELECT k, id FROM kk EMIT CHANGES;", "a KAFKA key is decoded by Spark, and may fail"),
    ("SELECT id, h FROM hs EMIT CHANGES;", "an unreadable header is an error"),
    ("SELECT k, id FROM tb EMIT CHANGES;", "a table: keys and tombstones"),
    ("SELECT v, COUNT(*) AS c FROM s GROUP BY v EMIT CHANGES;", "an aggregation"),
    ("SELECT a.id FROM s a JOIN tb t ON a.v = t.k EMIT CHANGES;", "a join"),
    ("SELECT v FROM ds EMIT CHANGES;", "nothing is decoded in the worker"),
])
def test_the_bytes_stay_where_something_may_read_them(text, why):
    assert not _elided(text), why


def test_a_persistent_query_or_a_view_keeps_the_bytes():
    assert not _elided("SELECT id, v FROM s EMIT CHANGES;", forwarded=True)
    assert not _elided("SELECT id FROM pv EMIT CHANGES;", views=[("PV", "SELECT id, v FROM s EMIT CHANGES;")])


@pytest.mark.parametrize("text, metadata", [
    ("SELECT id, v FROM s;", ("partition", "offset")),
    ("SELECT id, v FROM s EMIT CHANGES;", ("partition", "offset", "timestamp")),  # shown in record-time order
    ("SELECT id, ROWTIME AS t FROM s;", ("partition", "offset", "timestamp")),
    ("SELECT id FROM s WHERE ROWTIME > 5;", ("partition", "offset", "timestamp")),
    ("SELECT id, ROWPARTITION AS p, ROWOFFSET AS o FROM s EMIT CHANGES;", ("partition", "offset", "timestamp")),
    ("SELECT k, id FROM tb EMIT CHANGES;", ("partition", "offset", "timestamp")),  # newest per key: by time
    ("SELECT v, COUNT(*) AS c FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY v EMIT CHANGES;",
     ("partition", "offset", "timestamp")),
])
def test_metadata_columns_are_read_when_used_and_the_topic_never(text, metadata):
    plan = _plan(text)
    assert _needs(plan, False).metadata == metadata
    assert _shape(text).metadata == metadata


def test_a_materialize_timestamp_column_or_a_persistent_query_reads_the_timestamp():
    plan = _plan("SELECT ts FROM m", "materialize")
    assert "timestamp" in _needs(plan, False).metadata
    plan = _plan("SELECT o FROM m", "materialize")
    assert "timestamp" not in _needs(plan, False).metadata
    plan = _plan("SELECT id FROM s EMIT CHANGES;")
    assert "timestamp" in _needs(plan, True).metadata


def test_a_subscribe_reads_each_records_timestamp_and_keeps_its_bytes():
    """Its diffs carry each record's time as mz_timestamp (engine.subscribe.rules)."""
    from dataclasses import replace

    from kafkasql_magic.engine.subscribe.rules import subscribed

    plan = _plan("SELECT o FROM m", "materialize")
    assert "timestamp" not in _needs(plan, False).metadata
    plan = subscribed(replace(plan))
    assert "timestamp" in _needs(plan, False).metadata
    assert not _needs(plan).raw_bytes_unused


def test_raw_bytes_are_kept_where_rows_become_output_records_or_pruning_is_off():
    plan = _plan("SELECT id, v FROM s EMIT CHANGES;")
    assert _needs(plan).raw_bytes_unused
    assert not _needs(plan, written=True).raw_bytes_unused
    unpruned = read_needs(tree_of(plan), plan.source, headers_forwarded=False, records_forwarded=False,
                          prune_raw=False)
    assert (unpruned.raw_bytes_unused, unpruned.metadata) == (False, ALL_METADATA) and ALL_METADATA == METADATA


# -- the options ---------------------------------------------------------------------------

def test_the_read_shape_round_trips_through_the_source_options():
    shape = ReadShape(WorkerDecoding(json_value=PAIRS, raw_undecoded_only=True), ("partition", "offset"))
    options = shape.options()
    assert options["rawBytes"] == "undecoded" and json.loads(options["metadataColumns"]) == ["partition", "offset"]
    parsed = SourceOptions.parse({**BASE, **options}, streaming=False)
    assert parsed.decoding == shape.decoding and parsed.metadata == ("partition", "offset")
    assert arrow_schema(parsed.decoding, parsed.metadata).names[:5] == ["key", "value", "headers", "partition", "offset"]
    default = SourceOptions.parse(BASE, streaming=False)
    assert default.metadata == METADATA and default.decoding is None
    assert ReadShape().options() == {} and not ReadShape() and ReadShape(None, ("offset",))


@pytest.mark.parametrize("options, message", [
    ({"metadataColumns": '["topic", "key"]'}, "metadataColumns must be a JSON list of some of topic"),
    ({"metadataColumns": "offset"}, "metadataColumns must be a JSON list"),
    ({"rawBytes": "some"}, "rawBytes must be all or undecoded"),
    ({"rawBytes": "undecoded"}, "needs jsonValueColumns or jsonKeyColumns"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(KafkaError, match=message):
        SourceOptions.parse({**BASE, **options}, streaming=False)


# -- the worker ----------------------------------------------------------------------------

VALUES = [b'{"id": 1, "v": "a"}', None, b"not json", b'{"id": 2, "v": "b"}', b'{"id": 5} x']
KEYS = [b"k0", b"k1", None, None, b"k4"]


def test_decoded_records_leave_their_bytes_out_and_the_rest_keep_theirs():
    decode = WorkerDecoding(json_value=PAIRS, raw_undecoded_only=True).decoders()
    keys, values, (flag, ids, vs) = decode(pa.array(KEYS, pa.binary()), pa.array(VALUES, pa.binary()))
    assert flag.to_pylist() == [True, False, False, True, False]
    assert ids.to_pylist() == [1, None, None, 2, None] and vs.to_pylist() == ["a", None, None, "b", None]
    # a tombstone (None) stays NULL with its flag false; bad records keep key and value bytes
    assert values.to_pylist() == [None, None, b"not json", None, b'{"id": 5} x']
    assert keys.to_pylist() == [None, b"k1", None, None, b"k4"]
    kept = WorkerDecoding(json_value=PAIRS).decoders()
    assert kept(pa.array(KEYS, pa.binary()), pa.array(VALUES, pa.binary()))[1].to_pylist() == VALUES


def test_with_key_and_value_decoded_a_record_keeps_its_bytes_unless_both_were():
    decoding = WorkerDecoding(json_key=(("k", "BIGINT"),), json_value=PAIRS, raw_undecoded_only=True)
    keys = [b'{"k": 1}', b'{"k": 2}', b"bad key", b'{"k": 4}']
    values = [b'{"id": 1}', b"bad value", b'{"id": 3}', None]
    out_keys, out_values, columns = decoding.decoders()(pa.array(keys, pa.binary()), pa.array(values, pa.binary()))
    assert out_keys.to_pylist() == [None, b'{"k": 2}', b"bad key", b'{"k": 4}']
    assert out_values.to_pylist() == [None, b"bad value", b'{"id": 3}', None]
    assert parse(decoding.options()) == decoding


def _messages(values, first=10):
    return [Message(topic="t", partition=3, offset=first + i, key=b"k%d" % i, value=v, timestamp=(1, 1000 + i),
                    headers=None) for i, v in enumerate(values)]


def test_a_batch_holds_only_the_metadata_columns_asked_for():
    decoding = WorkerDecoding(json_value=PAIRS, raw_undecoded_only=True)
    metadata = ("partition", "offset")
    schema = arrow_schema(decoding, metadata)
    batch = to_record_batch(_messages(VALUES), "t", 3, schema, False, None, decoding.decoders(), metadata)
    assert batch.schema.names == ["key", "value", "headers", "partition", "offset", json_columns.DECODED,
                                  "__json_0", "__json_1"]
    assert batch.column("offset").to_pylist() == [10, 11, 12, 13, 14]
    assert batch.column("partition").to_pylist() == [3] * 5
    assert batch.column("value").to_pylist() == [None, None, b"not json", None, b'{"id": 5} x']
    assert batch.column("key").to_pylist() == [None, b"k1", b"k2", None, b"k4"]
    full = to_record_batch(_messages(VALUES[:2]), "t", 3)
    assert full.schema.names == ["key", "value", "headers", *METADATA]
    assert full.column("topic").to_pylist() == ["t", "t"] and full.column("timestamp")[1].value == 1_001_000


def test_a_read_without_headers_or_some_metadata_has_no_such_columns():
    from kafkasql_magic.kafka.source import KafkaSqlDataSource

    options = {**BASE, "includeHeaders": "false", **ReadShape(WorkerDecoding(json_value=PAIRS), ("offset",)).options()}
    assert KafkaSqlDataSource(options).schema().fieldNames() == ["key", "value", "offset", json_columns.DECODED,
                                                                  "__json_0", "__json_1"]
    assert KafkaSqlDataSource(BASE).schema().fieldNames() == ["key", "value", "headers", *METADATA]
    schema = arrow_schema(None, ("offset",), headers=False)
    batch = to_record_batch(_messages(VALUES[:3]), "t", 3, schema, False, None, None, ("offset",))
    assert batch.schema.names == ["key", "value", "offset"] and batch.column("offset").to_pylist() == [10, 11, 12]
