"""Dialect objects: naming, envelope rules and DDL behind one interface. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic import dialects, formats
from kafkasql_magic.dialects import SourceContext
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.dialects.dialect import KEY_WITHOUT_VALUE, NULL_KEY
from kafkasql_magic.errors import KStreamError, StatementError
from kafkasql_magic.sql import parse_statement

def context(latest_schema=None) -> SourceContext:
    return SourceContext({ddl.DEFAULT_KEY_FORMAT: "KAFKA"}, "http://registry", "", infer=None,
                         latest_schema=latest_schema)


def define(dialect, text):
    return dialect.define_source(parse_statement(text, dialect=dialect.name), context())


def test_dialects_by_name():
    assert dialects.get("Materialize") is dialects.MATERIALIZE and dialects.get("ksql") is dialects.KSQL
    assert isinstance(dialects.MATERIALIZE, type(dialects.KSQL))  # Materialize extends ksql's tables
    with pytest.raises(KStreamError, match="Unknown SQL dialect 'pg'"):
        dialects.get("pg")


def test_each_dialect_defines_its_own_statements_into_one_catalog_shape():
    ksql = define(dialects.KSQL, "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');")
    mz = define(dialects.MATERIALIZE, "CREATE SOURCE s FROM KAFKA TOPIC 't' KEY FORMAT TEXT VALUE FORMAT TEXT "
                                      "INCLUDE KEY")
    assert (ksql.dialect, [c.name for c in ksql.columns]) == ("ksql", ["ID", "V"])
    assert (mz.dialect, [c.name for c in mz.columns]) == ("materialize", ["key", "text"])
    with pytest.raises(KeyError):  # ksql has no CREATE SOURCE ... FROM KAFKA
        dialects.KSQL.define_source(parse_statement("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT",
                                                    dialect="materialize"), context())


def test_registry_lookups_are_injected():
    asked = []

    def latest_schema(url, topic, role):
        asked.append((url, topic, role))
        return {"type": "record", "name": "v", "fields": [{"name": "A", "type": "int"}]}

    stmt = parse_statement("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY 'http://u'",
                           dialect="materialize")
    source = dialects.MATERIALIZE.define_source(stmt, context(latest_schema))
    assert asked == [("http://u", "t", "value")] and [c.name for c in source.columns] == ["a"]


def test_name_clashes_follow_the_dialect():
    exact = define(dialects.KSQL, "CREATE STREAM s (v INT, `v` INT) WITH (kafka_topic='t', value_format='JSON');")
    assert [c.name for c in exact.columns] == ["V", "v"]
    with pytest.raises(StatementError, match="Duplicate column names: V"):
        define(dialects.KSQL, "CREATE STREAM s (v INT, v STRING) WITH (kafka_topic='t', value_format='JSON');")
    with pytest.raises(StatementError, match='column "key" specified more than once'):
        define(dialects.MATERIALIZE, "CREATE SOURCE s (key, Key) FROM KAFKA TOPIC 't' KEY FORMAT TEXT "
                                     "VALUE FORMAT TEXT INCLUDE KEY")


def test_envelope_rules_follow_the_source_dialect():
    ksql = define(dialects.KSQL, "CREATE STREAM s (v STRING) WITH (kafka_topic='t', value_format='JSON');")
    table = define(dialects.KSQL, "CREATE TABLE t (k STRING PRIMARY KEY, v STRING) "
                                  "WITH (kafka_topic='t', value_format='JSON');")
    mz = define(dialects.MATERIALIZE, "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT")
    upsert = define(dialects.MATERIALIZE, "CREATE SOURCE u FROM KAFKA TOPIC 't' KEY FORMAT TEXT VALUE FORMAT TEXT "
                                          "ENVELOPE UPSERT")
    assert dialects.KSQL.envelope_rules(ksql) == ()
    assert [c for c, _ in dialects.KSQL.envelope_rules(table)] == [NULL_KEY]
    assert [c for c, _ in dialects.MATERIALIZE.envelope_rules(mz)] == [KEY_WITHOUT_VALUE]
    assert dialects.MATERIALIZE.envelope_rules(upsert) == ((NULL_KEY, (
        "Envelope error: Upsert: Null key: record with NULL key in UPSERT source; to retract this error, produce a "
        "record upstream with a NULL key and NULL value")),)
    assert dialects.MATERIALIZE.skips_empty(mz) and not dialects.MATERIALIZE.skips_empty(upsert)
    assert not dialects.KSQL.skips_empty(ksql)


def test_materialize_formats_are_validated_like_ksql_ones(monkeypatch):
    kafka = formats.lookup("KAFKA")
    seen = []
    monkeypatch.setattr(kafka, "validate", lambda fields, role, kind: seen.append((role, kind, len(fields))))
    define(dialects.MATERIALIZE, "CREATE SOURCE s FROM KAFKA TOPIC 't' KEY FORMAT TEXT VALUE FORMAT BYTES "
                                 "INCLUDE KEY")
    assert seen == [("key", "STREAM", 1), ("value", "STREAM", 1)]


def test_a_materialize_column_list_may_name_only_the_first_columns():
    src = define(dialects.MATERIALIZE, "CREATE SOURCE s (a, b) FROM KAFKA TOPIC 't' FORMAT CSV WITH 2 COLUMNS "
                                       "INCLUDE OFFSET")
    assert [c.name for c in src.columns] == ["a", "b", "offset"]
    src = define(dialects.MATERIALIZE, "CREATE SOURCE s (a) FROM KAFKA TOPIC 't' FORMAT CSV WITH 2 COLUMNS")
    assert [c.name for c in src.columns] == ["a", "column2"]
    with pytest.raises(StatementError, match="^source definition names 3 columns, but source has 2 columns$"):
        define(dialects.MATERIALIZE, "CREATE SOURCE s (a, b, c) FROM KAFKA TOPIC 't' FORMAT CSV WITH 2 COLUMNS")
