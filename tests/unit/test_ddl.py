"""CREATE STREAM/TABLE validation: ksqlDB's rules and exact messages, without Spark or Kafka."""

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.catalog import HEADER, HEADERS, KEY, VALUE, Catalog
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement

DEFAULTS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}


def create(text, settings=DEFAULTS):
    return ddl.source_from_create(parse_statement(text), settings, text)


def error_of(text, settings=DEFAULTS):
    with pytest.raises(StatementError) as info:
        create(text, settings)
    return str(info.value)


def test_stream_with_key_value_and_header_columns():
    src = create(
        "CREATE STREAM s (id INT KEY, v STRING, h ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
        "WITH (kafka_topic='t', value_format='json');"
    )
    assert (src.kind, src.name, src.topic) == ("STREAM", "S", "t")
    assert [(c.name, c.role) for c in src.columns] == [("ID", KEY), ("V", VALUE), ("H", HEADERS)]
    assert (src.key_format.name, src.value_format.name) == ("KAFKA", "JSON")


def test_header_column_keeps_its_key_and_star_puts_keys_first():
    src = create("CREATE STREAM s (v STRING, h BYTES HEADER('trace'), id INT KEY) "
                 "WITH (kafka_topic='t', value_format='JSON');")
    assert [(c.name, c.role, c.header_key) for c in src.star_columns] == [
        ("ID", KEY, None), ("V", VALUE, None), ("H", HEADER, "trace")]


def test_format_sets_both_parts():
    src = create("CREATE STREAM s (id STRING KEY, v STRING) WITH (kafka_topic='t', format='json');")
    assert (src.key_format.name, src.value_format.name) == ("JSON", "JSON")


@pytest.mark.parametrize("part", ["KEY_FORMAT", "VALUE_FORMAT"])
def test_format_and_part_format_conflict(part):
    msg = error_of(f"CREATE STREAM s (v STRING) WITH (kafka_topic='t', format='JSON', {part}='KAFKA');")
    assert msg == (
        f"Cannot supply both '{part}' and 'FORMAT' properties, as 'FORMAT' sets both key and value formats. "
        "Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'."
    )


def test_unknown_format():
    assert error_of("CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='foo');") == "Unknown format: FOO"


def test_missing_value_format_and_the_default_setting():
    assert error_of("CREATE STREAM s (v STRING) WITH (kafka_topic='t');") == (
        "Statement is missing the 'VALUE_FORMAT' property from the WITH clause. Either provide one or set a "
        "default via the 'ksql.persistence.default.format.value' config."
    )
    src = create("CREATE STREAM s (v STRING) WITH (kafka_topic='t');",
                 {**DEFAULTS, ddl.DEFAULT_VALUE_FORMAT: "delimited"})
    assert src.value_format.name == "DELIMITED"


def test_kafka_format_rejects_boolean_and_many_columns():
    assert error_of("CREATE STREAM s (k BOOLEAN KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');") \
        == "The 'KAFKA' format does not support type 'BOOLEAN'"
    assert "only supports a single field" in error_of(
        "CREATE STREAM s (a INT, b INT) WITH (kafka_topic='t', value_format='KAFKA');")


@pytest.mark.parametrize("key, fmt, message", [  # ksqlDB names the base type; DELIMITED the column too
    ("k DECIMAL(2, 1) KEY", "KAFKA", "The 'KAFKA' format does not support type 'DECIMAL'"),
    ("k STRUCT<A INT> KEY", "KAFKA", "The 'KAFKA' format does not support type 'STRUCT'"),
    ("k STRUCT<A INT> KEY", "DELIMITED", "The 'DELIMITED' format does not support type 'STRUCT', column: `K`"),
    ("k ARRAY<INT> KEY", "DELIMITED", "The 'DELIMITED' format does not support type 'ARRAY', column: `K`"),
])
def test_a_key_type_a_format_cannot_hold_is_named_as_ksqldb_names_it(key, fmt, message):
    assert error_of(f"CREATE STREAM s ({key}, v STRING) WITH (kafka_topic='t', key_format='{fmt}', "
                    "value_format='JSON');") == message


def test_none_key_format_needs_no_key_columns():
    assert error_of("CREATE STREAM s (k STRING KEY, v STRING) WITH (kafka_topic='t', key_format='NONE', "
                    "value_format='JSON');") == \
        "The 'NONE' format can only be used when no columns are defined. Got: [`K` STRING KEY]"
    create("CREATE STREAM s (v STRING) WITH (kafka_topic='t', key_format='NONE', value_format='JSON');")


@pytest.mark.parametrize("name", ["ROWTIME", "ROWPARTITION", "ROWOFFSET", "WINDOWSTART", "WINDOWEND"])
def test_reserved_column_names(name):
    assert error_of(f"CREATE STREAM s ({name.lower()} INT) WITH (kafka_topic='t', value_format='JSON');") == \
        f"'{name}' is a reserved column name. You cannot use it as a name for a column."


@pytest.mark.parametrize("columns, message", [
    ("h1 BYTES HEADERS",
     "Invalid type for HEADERS column: expected ARRAY<STRUCT<`KEY` STRING, `VALUE` BYTES>>, got BYTES"),
    ("h1 INT HEADER('key')", "Invalid type for HEADER('key') column: expected BYTES, got INTEGER"),
    ("h1 ARRAY<STRUCT<key STRING, value BYTES>> HEADERS, h2 ARRAY<STRUCT<key STRING, value BYTES>> HEADERS",
     "Schema already contains a HEADERS column."),
    ("h1 ARRAY<STRUCT<key STRING, value BYTES>> HEADERS, h2 BYTES HEADER('k')",
     "Schema already contains a HEADERS column."),
    ("h2 BYTES HEADER('k'), h1 ARRAY<STRUCT<key STRING, value BYTES>> HEADERS",
     "Schema already contains a HEADERS column."),
    ("h1 BYTES HEADER('blah'), h2 BYTES HEADER('blah')", "Schema already contains a HEADER('blah') column."),
])
def test_header_column_errors(columns, message):
    assert error_of(f"CREATE STREAM s (v STRING, {columns}) WITH (kafka_topic='t', value_format='JSON');") == message


def test_header_and_headers_stay_usable_as_column_names():
    src = create("CREATE STREAM s (header STRING, headers INT) WITH (kafka_topic='t', value_format='JSON');")
    assert [(c.name, c.role) for c in src.columns] == [("HEADER", VALUE), ("HEADERS", VALUE)]


@pytest.mark.parametrize("text, message", [  # elements.json
    ("CREATE STREAM s WITH (kafka_topic='t', format='DELIMITED');", "No columns supplied."),
    ("CREATE STREAM s (f0 INT) WITH (kafka_topic='t', value_format='JSON', window_type='SESSION');",
     "Windowed sources require a key column."),
])
def test_sources_without_the_columns_they_need(text, message):
    assert error_of(text) == message


def test_table_rules():
    assert error_of("CREATE TABLE t (v STRING) WITH (kafka_topic='t', value_format='JSON');") == \
        "Tables require a PRIMARY KEY. Please define the PRIMARY KEY."
    assert error_of("CREATE TABLE t (id INT KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');") == \
        "Line: 1, Col: 17: Column `ID` is a 'KEY' column: please use 'PRIMARY KEY' for tables."
    assert error_of("CREATE STREAM s (v INT,\n  id INT PRIMARY KEY) WITH (kafka_topic='t', value_format='JSON');") == \
        "Line: 2, Col: 3: Column `ID` is a 'PRIMARY KEY' column: please use 'KEY' for streams."


def test_missing_topic_unknown_property_duplicate_columns():
    assert error_of("CREATE STREAM s (v STRING) WITH (value_format='JSON');") == \
        'Missing required property "KAFKA_TOPIC" which has no default value.'
    assert error_of("CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='JSON', foo=1);") == \
        "Invalid config variable(s) in the WITH clause: FOO"
    assert error_of("CREATE STREAM s (v STRING, V INT) WITH (kafka_topic='t', value_format='JSON');") == \
        "Duplicate column names: V"


def test_catalog_add_replace_and_drop():
    catalog = Catalog()
    src = create("CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='JSON');")
    assert catalog.add(src)
    with pytest.raises(StatementError, match="already exists"):
        catalog.add(src)
    assert catalog.add(src, if_not_exists=True) is False
    assert catalog.add(src, or_replace=True)
    with pytest.raises(StatementError, match="Table S does not exist"):
        catalog.drop("TABLE", "S")
    assert catalog.drop("STREAM", "S") == src
    with pytest.raises(StatementError, match="S does not exist"):
        catalog.get("S")


def test_none_value_format_needs_no_value_columns():
    assert error_of("CREATE STREAM s (k STRING KEY, v STRING) WITH (kafka_topic='t', value_format='NONE');") == \
        "The 'NONE' format can only be used when no columns are defined. Got: [`V` STRING]"
    assert error_of("CREATE TABLE t (k STRING PRIMARY KEY, v STRING) WITH (kafka_topic='t', key_format='none', "
                    "value_format='JSON');") == \
        "The 'NONE' format can only be used when no columns are defined. Got: [`K` STRING KEY]"


def test_format_names_are_case_insensitive_and_keys_take_decimal_and_boolean():
    src = create("CREATE STREAM s (a DECIMAL(4, 2) KEY, b BOOLEAN KEY, v STRING) "
                 "WITH (kafka_topic='t', key_format='json', value_format='Json');")
    assert (src.key_format.name, src.value_format.name) == ("JSON", "JSON")


MAP_KEY = ("Map keys, including types that contain maps, are not supported as they may lead to unexpected "
           "behavior due to inconsistent serialization. Key column name: `{}`. Column type: {}. "
           "See https://github.com/confluentinc/ksql/issues/6621 for more.")


@pytest.mark.parametrize("key_type, fmt, shown", [
    ("MAP<STRING, DOUBLE>", "DELIMITED", "MAP<STRING, DOUBLE>"),  # before DELIMITED's own refusal, as ksqlDB
    ("MAP<INT, DOUBLE>", "KAFKA", "MAP<INTEGER, DOUBLE>"),
    ("STRUCT<F MAP<STRING, STRING>>", "JSON", "STRUCT<`F` MAP<STRING, STRING>>"),
    ("ARRAY<MAP<STRING, INT>>", "JSON", "ARRAY<MAP<STRING, INTEGER>>"),
])
def test_map_key_columns_are_refused_with_ksqldbs_message(key_type, fmt, shown):
    for kind, key in (("STREAM", "KEY"), ("TABLE", "PRIMARY KEY")):
        assert error_of(f"CREATE {kind} s (k {key_type} {key}, v INT) "
                        f"WITH (kafka_topic='t', format='{fmt}');") == MAP_KEY.format("K", shown)


def test_a_map_in_a_value_column_is_taken():
    src = create("CREATE STREAM s (k STRING KEY, v MAP<STRING, INT>) WITH (kafka_topic='t', format='JSON');")
    assert [c.type.name for c in src.columns] == ["STRING", "MAP"]


@pytest.mark.parametrize("text, message", [  # elements.json: checked before the registry is asked
    ("CREATE STREAM s WITH (kafka_topic='t', key_format='kafka', value_format='avro', key_schema_id=1);",
     "KEY_FORMAT should support schema inference when KEY_SCHEMA_ID is provided. Current format is KAFKA."),
    ("CREATE STREAM s WITH (kafka_topic='t', key_format='avro', value_format='kafka', value_schema_id=1);",
     "VALUE_FORMAT should support schema inference when VALUE_SCHEMA_ID is provided. Current format is KAFKA."),
    ("CREATE STREAM s (c3 INT KEY) WITH (kafka_topic='t', format='avro', key_schema_id=1);",
     "Table elements and KEY_SCHEMA_ID cannot both exist for create statement."),
    ("CREATE STREAM s (c1 INT, c2 INT) WITH (kafka_topic='t', format='avro', value_schema_id=2);",
     "Table elements and VALUE_SCHEMA_ID cannot both exist for create statement."),
    ("CREATE TABLE s WITH (kafka_topic='t', value_format='avro');",
     "Tables require a PRIMARY KEY. Please define the PRIMARY KEY."),
])
def test_schema_ids_and_table_keys_checked_before_the_registry(text, message):
    assert error_of(text) == message
