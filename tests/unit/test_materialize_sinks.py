"""Materialize's CREATE SINK: parsing and the checks against the relation (no Spark)."""

from __future__ import annotations

import json

import pytest

from kafkasql_magic.dialects.materialize_sinks import plan_sink, uniqueness_message, with_endpoints
from kafkasql_magic.errors import SqlSyntaxError, StatementError
from kafkasql_magic.formats import Field
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.ast_materialize import CreateSink, DropSink, ShowCreateSink

TEXT, INT, BYTEA = ast.Type("STRING"), ast.Type("INT"), ast.Type("BYTES")
TEXT_MAP = ast.Type("MAP", key=TEXT, value=TEXT)
COLUMNS = (Field("id", INT), Field("name", TEXT), Field("hs", TEXT_MAP), Field("raw", BYTEA))
INTO = "INTO KAFKA BROKER 'b:9092' (TOPIC 'out')"


def sink(text: str) -> CreateSink:
    return parse_statement(text, dialect="materialize")


def planned(tail: str, unique=(("id",),)):
    return plan_sink(sink(f"CREATE SINK s FROM src {INTO} {tail}"), COLUMNS, unique)


def test_create_sink_parses_every_clause():
    stmt = sink(f"CREATE SINK IF NOT EXISTS s FROM src {INTO} KEY (id, name) NOT ENFORCED HEADERS hs "
                "KEY FORMAT TEXT VALUE FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY 'http://r:8081' ENVELOPE UPSERT")
    assert (stmt.name, stmt.relation, stmt.topic, stmt.broker, stmt.connection) == ("s", "src", "out", "b:9092", None)
    assert (stmt.key, stmt.key_not_enforced, stmt.headers, stmt.envelope, stmt.if_not_exists) == (
        ("id", "name"), True, "hs", "UPSERT", True)
    assert (stmt.key_format.name, stmt.value_format.name, stmt.value_format.registry_url) == (
        "TEXT", "AVRO", "http://r:8081")
    other = sink("create sink s from src into kafka connection k (topic = 't') format json envelope debezium")
    assert (other.connection, other.broker, other.format.name, other.envelope, other.key) == (
        "k", None, "JSON", "DEBEZIUM", ())
    assert parse_statement("DROP SINK IF EXISTS s", dialect="materialize") == DropSink("s", True)
    assert parse_statement("SHOW SINKS", dialect="materialize") == ast.Show("SINKS")
    assert parse_statement("SHOW CREATE SINK S", dialect="materialize") == ShowCreateSink("s")


def test_a_missing_envelope_is_materializes_error_with_a_caret():
    with pytest.raises(SqlSyntaxError) as caught:
        sink(f"CREATE SINK s FROM src {INTO} FORMAT JSON")
    assert caught.value.reason == "ENVELOPE clause is required"
    assert (caught.value.line, caught.value.column) == (1, 76)  # where ENVELOPE belongs


def test_upsert_plans_key_formats_and_headers():
    spec = planned("KEY (id) HEADERS hs FORMAT JSON ENVELOPE UPSERT")
    assert [f.name for f in spec.key] == ["id"] and spec.headers == "hs"
    assert [f.name for f in spec.columns] == ["id", "name", "hs", "raw"]  # every column goes in the value
    assert (spec.key_format.name, spec.value_format.name, spec.relation_key) == ("JSON", "JSON", ("id",))
    unkeyed = planned("FORMAT JSON ENVELOPE DEBEZIUM", unique=())
    assert (unkeyed.key, unkeyed.key_format, unkeyed.relation_key) == ((), None, ())


@pytest.mark.parametrize("tail, unique, message", [
    ("KEY (name) FORMAT JSON ENVELOPE UPSERT", (("id",),),
     'upsert key could not be validated as unique\nDETAIL: Materialize could not prove that the specified '
     'upsert envelope key ("name") was a unique key of the underlying relation "materialize.public.src". '
     'The following keys are known to be unique for the underlying relation:\n  ("id")'),
    ("KEY (id, name) FORMAT JSON ENVELOPE UPSERT", (),
     'upsert key could not be validated as unique\nDETAIL: Materialize could not prove that the specified '
     'upsert envelope key ("id", "name") was a unique key of the underlying relation "materialize.public.src". '
     'There are no known valid unique keys for the underlying relation.'),
    ("FORMAT JSON ENVELOPE UPSERT", (("id",),), "upsert sinks must specify a key"),
    ("KEY (id, id) FORMAT JSON ENVELOPE UPSERT", (("id",),), "Repeated column name in sink key: id"),
    ("KEY (nope) FORMAT JSON ENVELOPE UPSERT", (("id",),), "No such column: nope"),
    ("KEY (id) HEADERS name FORMAT JSON ENVELOPE UPSERT", (("id",),),
     "HEADERS column must have type map[text => text] or map[text => bytea]"),
    ("KEY (id) HEADERS nope FORMAT JSON ENVELOPE UPSERT", (("id",),), "HEADERS column (nope) is unknown"),
    ("HEADERS hs FORMAT JSON ENVELOPE DEBEZIUM", (), "HEADERS option is not supported with ENVELOPE DEBEZIUM"),
])
def test_materializes_messages(tail, unique, message):
    with pytest.raises(StatementError) as caught:
        planned(tail, unique)
    assert str(caught.value) == message


def test_not_enforced_and_debezium_skip_the_uniqueness_check():
    assert [f.name for f in planned("KEY (name) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT", ()).key] == ["name"]
    assert [f.name for f in planned("KEY (name) FORMAT JSON ENVELOPE DEBEZIUM", ()).key] == ["name"]
    assert uniqueness_message("v", ["a"], [("b",), ("c", "d")]).endswith(
        'relation:\n  ("b")\n  ("c", "d")')


@pytest.mark.parametrize("tail, message", [
    ("KEY (id) FORMAT TEXT ENVELOPE UPSERT", "TEXT format requires a single-column value: the sink's value has "
                                             "4 columns (id, name, hs, raw)"),
    ("KEY (id) KEY FORMAT BYTES VALUE FORMAT JSON ENVELOPE UPSERT",
     "BYTES format cannot write column id of type int (it writes bytea or text)"),
    ("KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE DEBEZIUM",
     'ENVELOPE DEBEZIUM writes {"before": ..., "after": ...} records: its value format must be JSON or AVRO, '
     "not TEXT"),
    ("KEY (id) FORMAT CSV WITH 2 COLUMNS ENVELOPE UPSERT",
     "line 1:81: CSV is not a sink format: sinks write AVRO USING CONFLUENT SCHEMA REGISTRY, JSON, TEXT or BYTES"),
])
def test_formats_a_sink_cannot_write(tail, message):
    with pytest.raises(StatementError) as caught:
        planned(tail)
    assert str(caught.value) == message


def test_connections_become_the_broker_and_registry_they_name():
    endpoints = {("kc", "KAFKA"): "b:9092", ("csr", "CONFLUENT SCHEMA REGISTRY"): "http://reg:8081"}
    stmt = sink("CREATE SINK s FROM src INTO KAFKA CONNECTION kc (TOPIC 't') KEY (id) FORMAT AVRO USING "
                "CONFLUENT SCHEMA REGISTRY CONNECTION csr ENVELOPE UPSERT")
    spec = plan_sink(with_endpoints(stmt, lambda name, kind: endpoints[(name, kind)]), COLUMNS, [("id",)])
    assert (spec.broker, spec.value_format.registry_url, spec.key_format.registry_url) == (
        "b:9092", "http://reg:8081", "http://reg:8081")

    def unknown(name, kind):
        raise StatementError(f"unknown catalog item '{name}'")

    with pytest.raises(StatementError, match="^unknown catalog item 'kc'$"):
        with_endpoints(stmt, unknown)


def test_an_offset_is_materializes_uint8_in_avro_an_8_byte_big_endian_fixed():
    import io
    import json

    import fastavro

    from kafkasql_magic.sinks.mz_encode import KEY_RECORD, avro_payloads, debezium_schema, row_schema

    fields = (Field("id", INT), Field("o", ast.Type("BIGINT"), "uint8"), Field("o2", ast.Type("BIGINT"), "uint8"))
    uint8 = {"type": "fixed", "size": 8, "name": "com.materialize.sink.uint8"}
    schema = row_schema(fields, KEY_RECORD)
    assert [f["type"] for f in schema["fields"]] == [["null", "int"], ["null", uint8],
                                                   ["null", "com.materialize.sink.uint8"]]  # named once
    value = debezium_schema(fields)
    (payload,) = avro_payloads([{"before": None, "after": {"id": 1, "o": 258, "o2": None}}], 7, json.dumps(value),
                               "debezium", fields)
    assert payload[:5] == b"\0\0\0\0\x07"
    read = fastavro.schemaless_reader(io.BytesIO(payload[5:]), fastavro.parse_schema(value))
    assert read == {"before": None, "after": {"id": 1, "o": b"\0\0\0\0\0\0\x01\x02", "o2": None}}  # big-endian


def test_with_snapshot_false_is_kept_and_other_with_options_are_refused():
    assert planned("KEY (id) FORMAT JSON ENVELOPE UPSERT WITH (SNAPSHOT = false)").snapshot is False
    assert planned("KEY (id) FORMAT JSON ENVELOPE UPSERT WITH (SNAPSHOT = true)").snapshot is True
    assert planned("KEY (id) FORMAT JSON ENVELOPE UPSERT").snapshot is True
    with pytest.raises(SqlSyntaxError, match='Expected SNAPSHOT, found identifier "size"'):
        planned("KEY (id) FORMAT JSON ENVELOPE UPSERT WITH (SIZE = true)")
    with pytest.raises(SqlSyntaxError, match="SNAPSHOT specified more than once"):
        planned("KEY (id) FORMAT JSON ENVELOPE UPSERT WITH (SNAPSHOT = false, SNAPSHOT)")


def test_a_sink_without_its_snapshot_writes_the_batches_that_start_past_the_rows_held_at_creation():
    from kafkasql_magic.sinks.snapshot import started_after

    ends = [{0: 3, 1: 5}]
    assert not started_after(ends, None)  # the first batch reads from the start
    assert not started_after(ends, [{0: 3, 1: 4}])
    assert started_after(ends, [{0: 3, 1: 5}])
    assert started_after([{}], None)  # nothing held at creation: every batch is written
    assert not started_after([{}, {0: 1}], [{0: 9}, {}])


AVRO_CSR = "FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr"


def test_the_registry_formats_options_name_and_document_the_schemas():
    stmt = sink(f"CREATE SINK s FROM src {INTO} KEY (id) {AVRO_CSR} (AVRO KEY FULLNAME 'a.K' AVRO VALUE FULLNAME "
                "'a.V', NULL DEFAULTS, DOC ON TYPE src = 'both', VALUE DOC ON TYPE src = 'value', "
                "DOC ON COLUMN src.id = 'id', KEY DOC ON COLUMN src.id = 'key id') ENVELOPE UPSERT")
    shape = plan_sink(with_endpoints(stmt, lambda name, kind: "http://r:8081"), COLUMNS, (("id",),)).avro
    assert (shape.key_name, shape.value_name, shape.null_defaults) == ("a.K", "a.V", True)
    assert (shape.key_doc, shape.value_doc) == ("both", "value")
    assert (dict(shape.key_field_docs), dict(shape.value_field_docs)) == ({"id": "key id"}, {"id": "id"})
    for options, message in [
        ("AVRO KEY FULLNAME 'k'", "Must specify both AVRO KEY FULLNAME and AVRO VALUE FULLNAME when specifying "
                                  "generated schema names"),
        ("DOC ON COLUMN src.nope = 'x'", 'column "src.nope" does not exist'),
        ("DOC ON TYPE other = 'x'", "DOC ON TYPE names other: here a doc is for the sink's relation src")]:
        with pytest.raises(StatementError, match=message):
            plan_sink(sink(f"CREATE SINK s FROM src {INTO} KEY (id) {AVRO_CSR} ({options}) ENVELOPE UPSERT"),
                      COLUMNS, (("id",),))
    with pytest.raises(StatementError, match="Cannot specify AVRO KEY FULLNAME without a corresponding KEY field"):
        plan_sink(sink(f"CREATE SINK s FROM src {INTO} {AVRO_CSR} (AVRO KEY FULLNAME 'k', AVRO VALUE FULLNAME 'v') "
                       "ENVELOPE DEBEZIUM"), COLUMNS, ())
    with pytest.raises(SqlSyntaxError, match="a source takes none of them"):
        parse_statement(f"CREATE SOURCE x FROM KAFKA CONNECTION k (TOPIC 't') {AVRO_CSR} (NULL DEFAULTS)",
                        dialect="materialize")


def test_the_schemas_carry_the_names_docs_and_null_defaults():
    from kafkasql_magic.sinks.mz_encode import debezium_schema, row_schema

    fields = (Field("id", INT), Field("name", TEXT))
    assert row_schema(fields, "a.K", "top", {"id": "the id"}, null_defaults=True) == {
        "type": "record", "name": "a.K", "doc": "top", "fields": [
            {"name": "id", "type": ["null", "int"], "doc": "the id", "default": None},
            {"name": "name", "type": ["null", "string"], "default": None}]}
    value = debezium_schema(fields, "a.V", "top")
    assert (value["name"], value["fields"][0]["type"][1]["name"]) == ("a.V", "row")


def test_a_debezium_schema_documents_its_row_and_gives_before_and_after_no_default():
    """Materialize's checks/all_checks/comment.py: the envelope has no doc of its own, its `row`
    has the relation's, and `before` and `after` have no default (without NULL DEFAULTS)."""
    from kafkasql_magic.sinks.mz_encode import debezium_schema

    assert debezium_schema((Field("f3", INT),), doc="comment on comment_table") == {
        "type": "record", "name": "envelope", "fields": [
            {"name": "before", "type": ["null", {"type": "record", "name": "row", "fields": [
                {"name": "f3", "type": ["null", "int"]}], "doc": "comment on comment_table"}]},
            {"name": "after", "type": ["null", "row"]}]}
    assert [f["default"] for f in debezium_schema((Field("f3", INT),), null_defaults=True)["fields"]] == [None, None]


def test_the_exactly_once_prefixes_are_kept_as_written_once_each():
    options = planned("KEY (id) FORMAT JSON ENVELOPE UPSERT").topic_options
    assert (options.transactional_id_prefix, options.progress_group_id_prefix) == (None, None)
    stmt = sink("CREATE SINK s FROM src INTO KAFKA BROKER 'b:9092' (TOPIC 'out', TRANSACTIONAL ID PREFIX 'tx', "
                "PROGRESS GROUP ID PREFIX 'pg') KEY (id) FORMAT JSON ENVELOPE UPSERT")
    assert (stmt.topic_options.transactional_id_prefix, stmt.topic_options.progress_group_id_prefix) == ("tx", "pg")
    with pytest.raises(SqlSyntaxError, match="TRANSACTIONAL ID PREFIX specified more than once"):
        sink("CREATE SINK s FROM src INTO KAFKA BROKER 'b:9092' (TOPIC 'out', TRANSACTIONAL ID PREFIX 'a', "
             "TRANSACTIONAL ID PREFIX 'b') KEY (id) FORMAT JSON ENVELOPE UPSERT")
    assert parse_statement("SUBSCRIBE t WITH (PROGRESS)", dialect="materialize").options[0].name == "PROGRESS"


def test_compatibility_levels_are_kept_for_each_subject_and_checked_as_materialize_checks_them():
    shape = plan_sink(sink(f"CREATE SINK s FROM src {INTO} KEY (id) {AVRO_CSR} (KEY COMPATIBILITY LEVEL 'NONE', "
                           "VALUE COMPATIBILITY LEVEL = 'FULL') ENVELOPE UPSERT"), COLUMNS, (("id",),)).avro
    assert (shape.key_compatibility, shape.value_compatibility) == ("NONE", "FULL")
    with pytest.raises(StatementError, match="^invalid compatibility level: full$"):
        plan_sink(sink(f"CREATE SINK s FROM src {INTO} KEY (id) {AVRO_CSR} (VALUE COMPATIBILITY LEVEL 'full') "
                       "ENVELOPE UPSERT"), COLUMNS, (("id",),))
    with pytest.raises(SqlSyntaxError, match="KEY COMPATIBILITY LEVEL specified more than once"):
        sink(f"CREATE SINK s FROM src {INTO} {AVRO_CSR} (KEY COMPATIBILITY LEVEL 'NONE', KEY COMPATIBILITY LEVEL "
             "'FULL') ENVELOPE DEBEZIUM")


def test_record_columns_are_named_as_materialize_names_them():
    """Materialize's checks/all_checks/comment.py, `comment-sink1-value`: a record column's record
    is `record0` in `com.materialize.sink`; the same record type again is its name."""
    from kafkasql_magic.sinks.mz_encode import debezium_schema, row_schema

    record = ast.Type("STRUCT", fields=(("x", TEXT), ("y", INT), ("z", INT)))
    fields = (Field("f1", record), Field("f2", ast.Type("ARRAY", element=INT)), Field("f3", INT))
    assert debezium_schema(fields) == json.loads(
        '{"type":"record","name":"envelope","fields":[{"name":"before","type":["null",{"type":"record","name":"row",'
        '"fields":[{"name":"f1","type":["null",{"type":"record","name":"record0","namespace":"com.materialize.sink",'
        '"fields":[{"name":"x","type":["null","string"]},{"name":"y","type":["null","int"]},{"name":"z","type":'
        '["null","int"]}]}]},{"name":"f2","type":["null",{"type":"array","items":["null","int"]}]},{"name":"f3",'
        '"type":["null","int"]}]}]},{"name":"after","type":["null","row"]}]}')
    twice = row_schema((Field("a", record), Field("b", record)), "row")
    assert twice["fields"][1]["type"] == ["null", "com.materialize.sink.record0"]
