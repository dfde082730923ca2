"""What a read asks of each record's headers, from its source's header columns."""

from __future__ import annotations

import json

import pytest

from kafkasql_magic.catalog import HEADER, HEADERS, KEY, VALUE, Column, SourceDef
from kafkasql_magic.engine.analysis.headers import HeaderUse, header_use
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
