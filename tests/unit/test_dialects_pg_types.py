"""Materialize's type names for SHOW COLUMNS: the table and the rows built from catalog columns."""

from __future__ import annotations

import pytest

from kafkasql_magic import catalog, types
from kafkasql_magic.dialects.pg_types import SHOW_COLUMNS_HEADER, materialize_type_name, show_columns_rows
from kafkasql_magic.sql.ast import Type


@pytest.mark.parametrize(
    "type_, name",
    [
        (Type("BOOLEAN"), "bool"),
        (Type("INT"), "int4"),
        (Type("BIGINT"), "int8"),
        (Type("DOUBLE"), "float8"),
        (Type("DECIMAL", 10, 2), "numeric"),
        (Type("STRING"), "text"),
        (Type("BYTES"), "bytea"),
        (Type("DATE"), "date"),
        (Type("TIME"), "time"),
        (Type("TIMESTAMP"), "timestamp"),
        (Type("ARRAY", element=Type("STRING")), "list"),
        (Type("MAP", key=Type("STRING"), value=Type("BYTES")), "map"),
        (Type("STRUCT", fields=(("f", Type("INT")),)), "record"),
    ],
)
def test_type_names(type_, name):
    assert materialize_type_name(type_) == name


def test_metadata_roles_have_materialize_types():
    # we hold the offset as BIGINT; Materialize's offset is unsigned
    assert materialize_type_name(types.BIGINT, catalog.OFFSET) == "uint8"
    assert materialize_type_name(types.INT, catalog.PARTITION) == "int4"
    assert materialize_type_name(Type("TIMESTAMP"), catalog.TIMESTAMP) == "timestamp"
    assert materialize_type_name(types.BIGINT, catalog.KEY) == "int8"


def test_unknown_type_is_an_internal_error():
    with pytest.raises(ValueError, match="no Materialize name for type INTERVAL"):
        materialize_type_name(Type("INTERVAL"))


def test_show_columns_rows():
    headers = Type("ARRAY", element=Type("STRUCT", fields=(("key", types.STRING), ("value", types.BYTES))))
    columns = [
        catalog.Column("key", types.STRING, catalog.KEY),
        catalog.Column("data", types.BYTES),
        catalog.Column("headers", headers, catalog.HEADERS),
        catalog.Column("h", types.BYTES, catalog.HEADER, "h"),
        catalog.Column("partition", types.INT, catalog.PARTITION),
        catalog.Column("offset", types.BIGINT, catalog.OFFSET),
        catalog.Column("ts", Type("TIMESTAMP"), catalog.TIMESTAMP),
    ]
    rows = show_columns_rows(columns)
    assert [tuple(r[k] for k in SHOW_COLUMNS_HEADER) for r in rows] == [
        ("key", True, "text", ""),
        ("data", True, "bytea", ""),
        ("headers", False, "list", ""),
        ("h", True, "bytea", ""),
        ("partition", False, "int4", ""),
        ("offset", False, "uint8", ""),
        ("ts", False, "timestamp", ""),
    ]


def _source(value_format, columns, envelope="NONE"):
    from kafkasql_magic.formats import FormatSpec

    return catalog.SourceDef("STREAM", "s", "t", FormatSpec("KAFKA"), FormatSpec(value_format), tuple(columns),
                             envelope=envelope, dialect="materialize")


@pytest.mark.parametrize("value_format", ["KAFKA", "JSON_DOCUMENT", "DELIMITED"])
def test_a_bytes_text_json_or_csv_value_is_never_null(value_format):
    # Materialize's FORMAT BYTES `data bytea NOT NULL`, TEXT `text`, JSON `data jsonb`, CSV `columnN`
    columns = [catalog.Column("k", types.STRING, catalog.KEY), catalog.Column("data", types.BYTES),
               catalog.Column("h", types.BYTES, catalog.HEADER, "h")]
    rows = show_columns_rows(columns, _source(value_format, columns))
    assert [(r["name"], r["nullable"]) for r in rows] == [("k", True), ("data", False), ("h", True)]


def test_other_values_stay_nullable():
    data = catalog.Column("data", types.STRING)
    for source in (_source("AVRO", [data]), _source("REGEX", [data]), _source("JSON_DOCUMENT", [data], "DEBEZIUM"),
                   _source("KAFKA", [data, catalog.Column("error", types.STRING, catalog.INLINE_ERROR)], "UPSERT")):
        assert show_columns_rows([data], source)[0]["nullable"] is True
    assert show_columns_rows([data])[0]["nullable"] is True  # a view's columns


def test_own_types_an_offset_is_uint8_and_a_json_document_jsonb():
    from kafkasql_magic.dialects.pg_types import own_type

    offset, data = catalog.Column("o", types.BIGINT, catalog.OFFSET), catalog.Column("data", types.STRING)
    assert own_type(_source("JSON_DOCUMENT", [data, offset]), offset) == "uint8"
    assert own_type(_source("JSON_DOCUMENT", [data, offset]), data) == "jsonb"
    assert own_type(_source("KAFKA", [data]), data) is None
