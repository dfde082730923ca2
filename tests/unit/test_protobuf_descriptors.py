"""Materialize's FORMAT PROTOBUF without Spark: the statement forms, the columns a message gives
(with Materialize's refusals), the batch decoder on good and bad records, and a registered
schema compiled to a FileDescriptorSet."""

from __future__ import annotations

import pyarrow as pa
import pytest
from google.protobuf import message_factory

from kafkasql_magic.errors import SqlSyntaxError, StatementError
from kafkasql_magic.formats import protobuf_descriptors as pd
from kafkasql_magic.sql import ast
from kafkasql_magic.sql.materialize_parser import MATERIALIZE
from kafkasql_magic.sql.render_statements import render_statement

BATCH = """
syntax = "proto3";
package billing;
import "google/protobuf/timestamp.proto";
message Batch {
  int32 id = 1;
  string note = 2;
  Kind kind = 3;
  repeated int64 counts = 4;
  Line line = 5;
  repeated Line lines = 6;
  google.protobuf.Timestamp at = 7;
  double price = 8;
  bytes raw = 9;
  bool done = 10;
  enum Kind { SMALL = 0; LARGE = 1; }
  message Line { string sku = 1; sint32 qty = 2; }
}
"""


def descriptor_set(text: str, message: str) -> bytes:
    """What `protoc --include_imports --descriptor_set_out` writes for `text`."""
    return pd.compiled_set(text, (), message)[0]


def source_format(text: str) -> ast.SourceFormat:
    (stmt,) = MATERIALIZE.parse(text)
    return stmt.format


def test_the_three_ways_to_give_the_schema_parse_and_render_back():
    inline = source_format("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') "
                           "FORMAT PROTOBUF MESSAGE '.billing.Batch' USING SCHEMA '\\x0a30'")
    assert (inline.name, inline.protobuf_message, inline.protobuf_descriptors) == ("PROTOBUF", ".billing.Batch",
                                                                                   "\\x0a30")
    in_file = source_format("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') "
                            "FORMAT PROTOBUF MESSAGE 'billing.Batch' USING SCHEMA FILE '/tmp/b.pb'")
    assert (in_file.protobuf_message, in_file.protobuf_file) == ("billing.Batch", "/tmp/b.pb")
    registry = source_format("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') "
                             "FORMAT PROTOBUF USING CONFLUENT SCHEMA REGISTRY CONNECTION csr")
    assert (registry.protobuf_message, registry.registry_connection) == (None, "csr")
    for text in ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') FORMAT PROTOBUF MESSAGE 'a.B' USING SCHEMA "
                 "FILE '/tmp/b.pb'",
                 "CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') KEY FORMAT TEXT VALUE FORMAT PROTOBUF MESSAGE "
                 "'a.B' USING CONFLUENT SCHEMA REGISTRY CONNECTION csr ENVELOPE UPSERT"):
        (stmt,) = MATERIALIZE.parse(text)
        assert MATERIALIZE.parse(render_statement(stmt, "materialize")) == [stmt]


def test_a_schema_given_inline_must_name_its_message_at_the_format():
    with pytest.raises(SqlSyntaxError, match=r"line 1:58: FORMAT PROTOBUF USING SCHEMA needs the message"):
        MATERIALIZE.parse("CREATE SOURCE s FROM KAFKA BROKER 'b:1' TOPIC 't' FORMAT PROTOBUF USING SCHEMA '\\x0a'")


def test_message_file_and_protobuf_stay_column_names():
    (stmt,) = MATERIALIZE.parse("SELECT message, file, protobuf FROM t")
    assert [item.expr.name for item in stmt.items] == ["message", "file", "protobuf"]


def test_columns_follow_materialize_scalars_never_null_messages_as_records_well_known_types_too():
    columns = pd.columns(pd.message_of(descriptor_set(BATCH, 'billing.Batch'), ".billing.Batch"))
    line = ast.Type("STRUCT", fields=(("sku", ast.Type("STRING")), ("qty", ast.Type("INT"))))
    at = ast.Type("STRUCT", fields=(("seconds", ast.Type("BIGINT")), ("nanos", ast.Type("INT"))))
    assert columns == [("id", ast.Type("INT")), ("note", ast.Type("STRING")), ("kind", ast.Type("STRING")),
                       ("counts", ast.Type("ARRAY", element=ast.Type("BIGINT"))), ("line", line),
                       ("lines", ast.Type("ARRAY", element=line)), ("at", at), ("price", ast.Type("DOUBLE")),
                       ("raw", ast.Type("BYTES")), ("done", ast.Type("BOOLEAN"))]
    assert [name for name, t in columns if not pd.never_null(t)] == ["line", "at"]


@pytest.mark.parametrize("body, message", [
    ("message M { map<string, int32> m = 1; }", "Protobuf map fields are not supported"),
    ("message M { uint32 n = 1; }", "Protobuf unsigned integer types are not supported"),
    ("message M { repeated fixed64 n = 1; }", "Protobuf unsigned integer types are not supported"),
    ("message M { M self = 1; }", "Recursive types are not supported: M"),
    ("message M { N n = 1; } message N { M back = 1; }", "Recursive types are not supported: M"),
])
def test_what_materialize_refuses_is_refused_in_its_words(body, message):
    data = descriptor_set('syntax = "proto3";\n' + body, "M")
    with pytest.raises(StatementError, match=f"^{message}$"):
        pd.columns(pd.message_of(data, "M"))


def test_a_message_that_is_not_in_the_set_and_bytes_that_are_no_set_are_named():
    with pytest.raises(StatementError, match='^protobuf message "billing.Nope" not found in file descriptor set$'):
        pd.message_of(descriptor_set(BATCH, 'billing.Batch'), "billing.Nope")
    with pytest.raises(StatementError, match="^decoding file descriptor set: "):
        pd.message_of(b"\xff\xff\xff", "billing.Batch")
    with pytest.raises(StatementError, match="invalid input syntax for type bytea"):
        pd.bytea_literal("0a30")
    assert pd.bytea_literal("\\x0a30") == b"\x0a\x30"


def test_the_batch_decoder_gives_defaults_nulls_enum_names_and_materialize_error_texts():
    data = descriptor_set(BATCH, 'billing.Batch')
    cls = message_factory.GetMessageClass(pd.message_of(data, "billing.Batch"))
    full = cls(id=7, note="n", kind=1, counts=[1, 2], line=cls.Line(sku="a", qty=-2),
               lines=[cls.Line(sku="b", qty=3)], price=1.5, raw=b"\x00", done=True)
    full.at.seconds, full.at.nanos = 10, 5
    bad_enum = cls(kind=9).SerializeToString()
    fields = tuple(pd.columns(pd.message_of(data, "billing.Batch")))
    out = pd.decode_batch(pa.array([full.SerializeToString(), b"", b"\xff", None, bad_enum], type=pa.binary()),
                          fields, data, "billing.Batch", False).to_pylist()
    assert out[0] == {"id": 7, "note": "n", "kind": "LARGE", "counts": [1, 2], "line": {"sku": "a", "qty": -2},
                      "lines": [{"sku": "b", "qty": 3}], "at": {"seconds": 10, "nanos": 5}, "price": 1.5,
                      "raw": b"\x00", "done": True, pd.ERROR_FIELD: None}
    assert out[1] == {"id": 0, "note": "", "kind": "SMALL", "counts": [], "line": None, "lines": [], "at": None,
                      "price": 0.0, "raw": b"", "done": False, pd.ERROR_FIELD: None}
    assert out[2][pd.ERROR_FIELD].startswith("protobuf deserialization error: failed to decode Protobuf message: ")
    assert out[2][pd.ERROR_FIELD].endswith('(original bytes: "ff")')
    assert out[3][pd.ERROR_FIELD] is None and out[3]["id"] is None
    assert out[4][pd.ERROR_FIELD].startswith(
        "protobuf deserialization error: error decoding protobuf: unknown enum value 9 while decoding field kind")


def test_framed_records_skip_the_confluent_header_whatever_schema_id_it_names():
    data = descriptor_set(BATCH, 'billing.Batch')
    cls = message_factory.GetMessageClass(pd.message_of(data, "billing.Batch"))
    fields = tuple(pd.columns(pd.message_of(data, "billing.Batch")))
    framed = b"\x00\x00\x00\x03\xe7\x00" + cls(id=5).SerializeToString()
    out = pd.decode_batch(pa.array([framed, b"\x01\x00\x00\x00\x01\x00", b"\x00\x01"], type=pa.binary()),
                          fields, data, "billing.Batch", True).to_pylist()
    assert out[0]["id"] == 5 and out[0][pd.ERROR_FIELD] is None
    assert out[1][pd.ERROR_FIELD].startswith(
        "protobuf deserialization error: wrong Confluent-style protobuf serialization magic: expected 0, got 1")
    assert out[2][pd.ERROR_FIELD].startswith("protobuf deserialization error: Confluent-style protobuf datum is too "
                                             "few bytes: expected at least 5 bytes, got 2")


def test_a_schema_compiles_to_a_set_and_names_its_only_message():
    data, message = pd.compiled_set(BATCH, (), None)
    assert message == "billing.Batch"
    assert [name for name, _ in pd.columns(pd.message_of(data, message))][:3] == ["id", "note", "kind"]
    two = 'syntax = "proto3";\nmessage A { int32 a = 1; }\nmessage B { int32 b = 1; }'
    with pytest.raises(StatementError, match="^Protobuf schemas with multiple messages not yet supported$"):
        pd.compiled_set(two, (), None)
    assert pd.compiled_set(two, (), "B")[1] == "B"
