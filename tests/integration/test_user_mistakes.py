"""The statements the failure audit found reaching users as Spark, py4j, lark or Python errors,
run through `Session.sql` against the embedded broker and Spark as a user runs them: each is
a `KStreamError` with ksqlDB's message (a caret under the place in the statement where there
is one), chained to no other kind of exception. Each is refused before a query starts."""

from __future__ import annotations

import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.errors import ExpressionTypeError, KStreamError, SqlSyntaxError, StatementError


@pytest.fixture(scope="module")
def session(broker, spark):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=60)
    tag = uuid.uuid4().hex[:8]
    s.sql(f"CREATE STREAM s (id INT KEY, v STRING, n INT) WITH (kafka_topic='mistakes_{tag}', "
          "value_format='JSON', partitions=1);"
          f"CREATE STREAM s2 (id INT KEY, w STRING) WITH (kafka_topic='mistakes2_{tag}', "
          "value_format='JSON', partitions=1);")
    yield s
    s.stop()


def deep(opening: str, operand: str, closing: str, depth: int) -> str:
    return opening * depth + operand + closing * depth


@pytest.mark.parametrize("text, kind, message, column", [
    ("SELECT * FROM s WHERE v EMIT CHANGES;", ExpressionTypeError,
     "Type error in WHERE expression: Should evaluate to boolean but is V (STRING) instead.", 23),
    ("SELECT CAST(n AS DECIMAL(100, 2)) FROM s;", ExpressionTypeError,
     "DECIMAL precision must be between 1 and 38: DECIMAL(100,2)", 18),
    ("SELECT * FROM s JOIN s2 WITHIN 99999999999 DAYS ON s.id = s2.id EMIT CHANGES;", SqlSyntaxError,
     "Duration too long: 99999999999 DAYS (at most 36,500 DAYS)", 32),
    ("SELECT v[1] FROM s EMIT CHANGES;", ExpressionTypeError, "Subscript expression (V[1]) do not apply to STRING.", 8),
    ("SELECT ABS(v) FROM s;", ExpressionTypeError,
     "Function 'ABS' does not accept parameters (STRING).\nValid alternatives are:\nABS(INT val)", 8),
    (f"SELECT {deep('ABS(', 'n', ')', 490)} FROM s;", SqlSyntaxError, "Expressions nest too deeply", None),
    (f"SELECT {deep('NOT ', 'true', '', 490)} FROM s;", SqlSyntaxError, "Expressions nest too deeply", None),
    (f"SELECT {deep('- ', 'n', '', 490)} FROM s;", SqlSyntaxError, "Expressions nest too deeply", None),
    (f"SELECT {deep('CASE WHEN true THEN ', 'n', ' END', 244)} FROM s;", SqlSyntaxError,
     "Expressions nest too deeply", None),
    ("CREATE STREAM e (v STRING) WITH (kafka_topic='', value_format='JSON', partitions=1);", StatementError,
     "Topic name is illegal, it can't be empty", None),
    ("INSERT INTO nope SELECT * FROM s;", StatementError, "line 1:12: NOPE does not exist.", None),
    ("INSERT INTO nope (id, v) VALUES (1, 'a');", StatementError,
     "Cannot insert values into an unknown stream/table: NOPE", None),
])
def test_a_users_mistake_is_a_user_error_with_ksqldbs_message(session, text, kind, message, column):
    with pytest.raises(KStreamError) as info:
        session.sql(text, timeout=30)
    error = info.value
    assert isinstance(error, kind), repr(error)
    assert message in str(error)
    if column is not None:
        assert error.column == column
        caret = str(error).splitlines()[-1]
        assert caret.strip() == "^"
    chained = error.__cause__ or error.__context__
    assert chained is None or isinstance(chained, KStreamError), repr(chained)


def test_materializes_mistakes_are_refused_at_the_statement(session, broker):
    """A view naming a column its source lacks, and an Avro schema naming an unknown type or a
    record without fields, are refused when created, in Materialize's words with a caret."""
    from kafkasql_magic.kafka.producer import produce

    topic = f"mz_mistakes_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [{"value": "a"}], create_partitions=1)
    session.sql(f"CREATE SOURCE mistaken FROM KAFKA BROKER '{broker.bootstrap_servers}' TOPIC '{topic}' "
                "FORMAT TEXT", dialect="materialize")
    text = "SHOW SOURCES;\nCREATE MATERIALIZED VIEW v AS SELECT nosuch FROM mistaken"
    with pytest.raises(StatementError) as info:
        session.sql(text, dialect="materialize")
    assert str(info.value) == ('line 2:38: column "nosuch" does not exist\n'
                               "CREATE MATERIALIZED VIEW v AS SELECT nosuch FROM mistaken\n" + " " * 37 + "^")
    assert "v" not in set(session.sql("SHOW VIEWS", dialect="materialize").iloc[:, 0])
    for schema, reason in (('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "nosuch"}]}',
                            "Unknown type: nosuch"),
                           ('{"type": "record", "name": "r"}', "No `fields` in record")):
        with pytest.raises(StatementError) as info:
            session.sql(f"CREATE SOURCE bad_avro FROM KAFKA BROKER '{broker.bootstrap_servers}' TOPIC '{topic}' "
                        f"FORMAT AVRO USING SCHEMA '{schema}'", dialect="materialize")
        assert str(info.value).split("\n")[0] == f"line 1:{info.value.column}: validating avro schema: {reason}"
        assert str(info.value).split("\n")[2].endswith("^") and info.value.__cause__ is None
    assert "bad_avro" not in session.catalog
