"""Values refused at the statement (not when records fail later), with ksqlDB's or Materialize's
messages. No Spark, no Kafka: every check runs before either is touched."""

from __future__ import annotations

import pytest

import kafkasql_magic as ks
from kafkasql_magic.dialects import ksql_sources as ddl, materialize_sources as mz
from kafkasql_magic.dialects.materialize_sinks import plan_sink
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import Field
from kafkasql_magic.sql import ast, parse_statement

DEFAULTS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}


def create_error(text: str) -> str:
    with pytest.raises(StatementError) as info:
        ddl.source_from_create(parse_statement(text), DEFAULTS, text)
    return str(info.value)


def create_with(props: str, columns: str = "v STRING") -> str:
    return create_error(f"CREATE STREAM s ({columns}) WITH (kafka_topic='t', value_format='DELIMITED', {props});")


@pytest.mark.parametrize("value, message", [
    ("-1", "Invalid number of partitions in WITH clause (must be positive): -1"),
    ("0", "Invalid number of partitions in WITH clause (must be positive): 0"),
    ("99999999999", "Invalid number of partitions in WITH clause: 99999999999"),
    ("'abc'", "Invalid number of partitions in WITH clause: abc"),
])
def test_partitions_must_be_a_positive_int(value, message):
    assert create_with(f"partitions={value}") == message


def test_replicas_must_fit_a_short():
    assert create_with("partitions=1, replicas=40000") == "Invalid number of replicas in WITH clause: 40000"


def test_good_partitions_pass():
    text = "CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='JSON', partitions=3, replicas=1);"
    assert ddl.source_from_create(parse_statement(text), DEFAULTS, text).properties["PARTITIONS"] == 3


@pytest.mark.parametrize("columns, message", [
    ("d DECIMAL(100, 200)", "DECIMAL precision must be >= scale: DECIMAL(100,200)"),
    ("a ARRAY<DECIMAL(2, 5)>", "DECIMAL precision must be >= scale: DECIMAL(2,5)"),
    ("s STRUCT<x MAP<STRING, DECIMAL(3, 4)>>", "DECIMAL precision must be >= scale: DECIMAL(3,4)"),
    ("d DECIMAL(0, 0)", "DECIMAL precision must be >= 1: DECIMAL(0,0)"),
    ("d DECIMAL(39, 2)", "DECIMAL precision must be between 1 and 38: DECIMAL(39,2)"),
])
def test_decimal_parameters(columns, message):
    assert create_with("partitions=1", columns) == message


def test_value_delimiter_is_one_character_or_a_name():
    assert create_with("value_delimiter='abc'") == (
        "Invalid delimiter value: 'abc'. Delimiter must be a single character or [TAB, SPACE]\n"
        "Example valid value: ';'")
    text = "CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='DELIMITED', value_delimiter='TAB');"
    ddl.source_from_create(parse_statement(text), DEFAULTS, text)


@pytest.mark.parametrize("limit, message", [
    ("0", "Invalid LIMIT clause: LIMIT must be a positive integer, got 0"),
    ("99999999999999999999999999",
     "Invalid LIMIT clause: 99999999999999999999999999 is out of range (the most is 2147483647)"),
])
def test_limit_is_refused_before_anything_runs(limit, message):
    session = ks.connect("127.0.0.1:1")  # nothing listens: the check comes first
    with pytest.raises(StatementError) as info:
        session.sql(f"SELECT * FROM s EMIT CHANGES LIMIT {limit};")
    assert str(info.value) == message


def mz_error(text: str) -> str:
    with pytest.raises(StatementError) as info:
        mz.source_from_create(parse_statement(text, dialect="materialize"), registry_url=None, text=text)
    return str(info.value)


def test_materialize_avro_schema_must_be_json():
    assert mz_error("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT AVRO USING SCHEMA '{'").startswith(
        "line 1:45: validating avro schema: Expecting property name enclosed in double quotes")


@pytest.mark.parametrize("schema, message", [
    ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "nosuch"}]}', "Unknown type: nosuch"),
    ('"nosuch"', "Unknown type: nosuch"),
    ('{"type": "record", "name": "r"}', "No `fields` in record"),
    ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": {"type": "array"}}]}', "No `items` in array"),
    ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", {"type": "record", "name": "i"}]}]}',
     "No `fields` in record"),
    ('{"type": "enum", "name": "e"}', "No `symbols` field in enum"),
])
def test_materialize_avro_schema_must_be_an_avro_schema(schema, message):
    """Refused at the statement in Materialize's words (mz_avro's), a caret under the format."""
    text = f"CREATE SOURCE s FROM KAFKA TOPIC 't'\n  KEY FORMAT TEXT VALUE FORMAT AVRO USING SCHEMA '{schema}'"
    with pytest.raises(StatementError) as info:
        mz.source_from_create(parse_statement(text, dialect="materialize"), registry_url=None,
                              text=text, cell=text)
    headline, shown, caret = str(info.value).split("\n")
    assert headline == f"line 2:32: validating avro schema: {message}"
    assert shown[caret.index("^"):].startswith("AVRO USING SCHEMA")


def test_materialize_registry_url_must_be_absolute():
    assert mz_error("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY 'x'") == (
        "invalid schema registry URL 'x': relative URL without a base")


def test_a_view_cannot_read_itself():
    session = ks.connect("127.0.0.1:1", dialect="materialize")
    text = "CREATE SOURCE src FROM KAFKA TOPIC 't' FORMAT TEXT"
    session.catalog.add(mz.source_from_create(parse_statement(text, dialect="materialize"), registry_url=None))
    session.sql("CREATE VIEW w AS SELECT * FROM src; CREATE VIEW w2 AS SELECT * FROM w;")
    for text in ("CREATE OR REPLACE VIEW w AS SELECT * FROM w", "CREATE OR REPLACE VIEW w AS SELECT * FROM w2",
                 "CREATE OR REPLACE VIEW w AS SELECT * FROM (SELECT text FROM (SELECT * FROM w2) a) b"):
        with pytest.raises(StatementError) as info:
            session.sql(text)
        assert str(info.value) == "cannot replace view w: depended upon by new w definition"
    session.sql("CREATE OR REPLACE VIEW w AS SELECT text FROM src")  # replacing without a cycle works


@pytest.mark.parametrize("topic, message", [
    ("", "Topic name is illegal, it can't be empty"),
    ("..", 'Topic name cannot be "." or ".."'),
    ("x" * 250, f"Topic name is illegal, it can't be longer than 249 characters, Topic name: {'x' * 250}"),
    ("a b", "Topic name \"a b\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"),
])
def test_topic_names_the_broker_would_refuse_are_refused_by_every_statement(topic, message):
    """Every statement naming a topic, refused before a client sees the name (an empty name made
    the admin client raise ValueError)."""
    assert create_error(f"CREATE STREAM s (v STRING) WITH (kafka_topic='{topic}', value_format='JSON');") == message
    assert mz_error(f"CREATE SOURCE m FROM KAFKA TOPIC '{topic}' FORMAT TEXT") == message
    sink = parse_statement(f"CREATE SINK k FROM src INTO KAFKA BROKER 'b:9092' (TOPIC '{topic}') FORMAT JSON "
                           "ENVELOPE DEBEZIUM", dialect="materialize")
    with pytest.raises(StatementError) as info:
        plan_sink(sink, [Field("v", ast.Type("STRING"))], [])
    assert str(info.value) == message
    session = ks.connect("127.0.0.1:1")  # nothing listens: the check comes first
    session.catalog.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM src (v STRING) WITH (kafka_topic='t', value_format='JSON');"), DEFAULTS))
    for text in (f"PRINT '{topic}' FROM BEGINNING LIMIT 1;",
                 f"CREATE STREAM out WITH (kafka_topic='{topic}') AS SELECT * FROM src;"):
        with pytest.raises(StatementError) as info:
            session.sql(text)
        assert str(info.value) == message, text


def test_kafka_topic_names_of_every_legal_character_pass():
    text = "CREATE STREAM s (v STRING) WITH (kafka_topic='Orders.v1_eu-west', value_format='JSON');"
    assert ddl.source_from_create(parse_statement(text), DEFAULTS, text).topic == "Orders.v1_eu-west"
