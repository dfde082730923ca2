"""What a read asks of each record's headers, from its source's header columns."""

from __future__ import annotations

import json

import pytest

from kafkasql_magic.catalog import HEADER, HEADERS, KEY, VALUE, Column, SourceDef
from kafkasql_magic.engine.tree import tree_of
from kafkasql_magic.engine.tree.reads import HeaderUse, header_use, used_columns
from kafkasql_magic.errors import KafkaError
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.kafka import reads
from kafkasql_magic.kafka.source_options import SourceOptions
from kafkasql_magic.sql import ast


def _source(*columns: Column) -> SourceDef:
    return SourceDef("STREAM", "S", "t", FormatSpec("KAFKA"), FormatSpec("JSON"), columns)


BYTES = ast.Type("BYTES")
ID = Column("ID", ast.Type("INT"), KEY)
V = Column("V", ast.Type("STRING"), VALUE)


def test_no_header_column_reads_no_headers():
    assert header_use(_source(ID, V)) == HeaderUse(False)
    assert reads.bounded("b:1", "t", include_headers=False).options()["includeHeaders"] == "false"


def test_header_columns_read_only_their_keys_once_each():
    source = _source(ID, Column("A", BYTES, HEADER, "a"), Column("A2", BYTES, HEADER, "a"),
                     Column("B", BYTES, HEADER, "b"), V)
    use = header_use(source)
    assert use == HeaderUse(True, ("a", "b"))
    options = reads.bounded("b:1", "t", include_headers=use.needed, header_keys=use.keys).options()
    assert json.loads(options["headerKeys"]) == ["a", "b"] and "includeHeaders" not in options
    parsed = SourceOptions.parse(options, streaming=False)
    assert parsed.header_keys == ("a", "b") and parsed.include_headers


def test_a_headers_column_or_forwarding_reads_every_header():
    headers = Column("H", ast.Type("ARRAY"), HEADERS)
    assert header_use(_source(ID, headers, Column("A", BYTES, HEADER, "a"))) == HeaderUse(True, None)
    assert header_use(_source(ID, V), forwarded=True) == HeaderUse(True, None)
    assert "headerKeys" not in reads.bounded("b:1", "t").options()
    assert SourceOptions.parse({"bootstrap.servers": "b:1", "topic": "t"}, streaming=False).header_keys is None


@pytest.mark.parametrize("bad", ['{"a": 1}', "[1]", "a,b"])
def test_bad_header_keys_option_is_named(bad):
    with pytest.raises(KafkaError, match="headerKeys must be a JSON list of header keys"):
        SourceOptions.parse({"bootstrap.servers": "b:1", "topic": "t", "headerKeys": bad}, streaming=False)


def _plan(text: str, dialect: str = "ksql", views=()):
    from kafkasql_magic import dialects
    from kafkasql_magic.catalog import Catalog, ViewDef
    from kafkasql_magic.dialects import SourceContext
    from kafkasql_magic.dialects import ksql_sources as ddl
    from kafkasql_magic.engine.analysis import analyse
    from kafkasql_magic.sql import parse_statement

    settings = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}
    cat = Catalog()
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM s (id INT KEY, v STRING, a BYTES HEADER('a'), b BYTES HEADER('b')) "
        "WITH (kafka_topic='t', value_format='JSON');"), settings))
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM sh (id INT KEY, v STRING, hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
        "WITH (kafka_topic='t', value_format='JSON');"), settings))
    context = SourceContext(settings, None, "", infer=None, latest_schema=None)
    cat.add(dialects.MATERIALIZE.define_source(parse_statement(
        "CREATE SOURCE m FROM KAFKA TOPIC 'm' FORMAT TEXT INCLUDE HEADER 'x' AS x, HEADER 'y' AS y BYTES",
        dialect="materialize"), context))
    for name, query, in_dialect in views:
        cat.add(ViewDef(name, parse_statement(query, dialect=in_dialect), dialect=in_dialect))
    return analyse(parse_statement(text, dialect=dialect), cat, dialect)


def _use(text: str, dialect: str = "ksql", views=()):
    plan = _plan(text, dialect, views)
    return header_use(plan.source, used=used_columns(tree_of(plan)))


@pytest.mark.parametrize("text, expected", [
    ("SELECT id, v FROM s EMIT CHANGES;", HeaderUse(False)),
    ("SELECT id FROM s WHERE v = 'x' EMIT CHANGES;", HeaderUse(False)),
    ("SELECT v, a FROM s EMIT CHANGES;", HeaderUse(True, ("a",))),
    ("SELECT v FROM s WHERE LEN(b) > 1 EMIT CHANGES;", HeaderUse(True, ("b",))),
    ("SELECT COUNT(*) FROM s GROUP BY a EMIT CHANGES;", HeaderUse(True, ("a",))),
    ("SELECT * FROM s EMIT CHANGES;", HeaderUse(True, ("a", "b"))),
    ("SELECT v FROM sh EMIT CHANGES;", HeaderUse(False)),
    ("SELECT v, hs FROM sh EMIT CHANGES;", HeaderUse(True, None)),
    ("SELECT * FROM sh EMIT CHANGES;", HeaderUse(True, None)),
])
def test_a_query_reads_only_the_headers_it_uses(text, expected):
    assert _use(text) == expected


def test_a_header_column_that_can_fail_a_record_is_read_whatever_the_query_selects():
    # Materialize: a record without an INCLUDEd header is an error, so both keys are read
    assert _use("SELECT text FROM m", "materialize") == HeaderUse(True, ("x", "y"))


def test_a_view_passes_on_the_header_columns_it_uses():
    views = [("HV", "SELECT id, a AS aa FROM s EMIT CHANGES;", "ksql")]
    assert _use("SELECT id FROM hv EMIT CHANGES;", views=views) == HeaderUse(True, ("a",))
    assert _use("SELECT * FROM hv EMIT CHANGES;", views=views) == HeaderUse(True, ("a",))
    plain = [("PV", "SELECT id, v FROM sh EMIT CHANGES;", "ksql")]
    assert _use("SELECT * FROM pv EMIT CHANGES;", views=plain) == HeaderUse(False)
