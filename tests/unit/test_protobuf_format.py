"""PROTOBUF framing and the batch decoder, without Spark or a registry (PROTOBUF_NOSR layout)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkasql_magic.formats import protobuf, protobuf_types
from kafkasql_magic.formats.protobuf_schema import Schema
from kafkasql_magic.sql import ast

INT, STRING = ast.Type("INT"), ast.Type("STRING")


@pytest.mark.parametrize("data, expected", [
    (b"\x00rest", ((0,), 1)),                 # the first message: one 0 byte
    (b"\x02\x02rest", ((1,), 2)),             # [1]
    (b"\x04\x02\x06rest", ((1, 3), 3)),       # [1, 3]: a nested message
])
def test_message_indexes_are_zigzag_varints_after_a_count(data, expected):
    assert protobuf.read_indexes(data, 0) == expected


def test_truncated_indexes_are_an_error_not_a_guess():
    with pytest.raises(ValueError, match="ends inside the message indexes"):
        protobuf.read_indexes(b"\x04\x02", 0)


def test_nosr_batch_reads_good_messages_and_reports_bad_bytes_in_place():
    fields = (("ID", INT), ("NAME", STRING))
    cls = Schema(protobuf_types.proto_text(list(fields))).message_class([0])
    values = pa.array([cls(ID=1, NAME="a").SerializeToString(), b"\xff\xff", None,
                       cls(ID=2).SerializeToString()], type=pa.binary())
    out = protobuf.decode_batch(values, protobuf.Layout(fields, False, None)).to_pylist()
    assert [(r["ID"], r["NAME"]) for r in out] == [(1, "a"), (None, None), (None, None), (2, "")]
    errors = [r[protobuf.ERROR_FIELD] for r in out]
    assert errors[0] is None and errors[2] is None and errors[3] is None
    assert errors[1].startswith("Error deserializing PROTOBUF message (PROTOBUF_NOSR): DecodeError")


def test_a_single_key_column_reads_the_one_field_of_the_message():
    fields = (("K", STRING),)
    cls = Schema(protobuf_types.proto_text([("id", STRING)])).message_class([0])
    values = pa.array([cls(id="x").SerializeToString()], type=pa.binary())
    layout = protobuf.Layout(fields, True, None)
    layout._build = lambda schema_id, indexes: (cls, layout._read_message(cls.DESCRIPTOR))
    assert protobuf.decode_batch(values, layout).to_pylist()[0]["K"] == "x"


def test_the_written_proto_holds_nested_structs_and_well_known_types():
    text = protobuf_types.proto_text([("ID", INT), ("AT", ast.Type("TIMESTAMP")),
                                      ("P", ast.Type("STRUCT", fields=(("X", ast.Type("DOUBLE")),)))])
    desc = Schema(text).message([0])
    assert desc.name == "ConnectDefault1"
    assert [f.name for f in desc.fields] == ["ID", "AT", "P"]
    assert desc.fields_by_name["AT"].message_type.full_name == "google.protobuf.Timestamp"
    assert desc.fields_by_name["P"].message_type.fields[0].name == "X"


def test_a_written_decimal_carries_its_precision_and_scale_as_confluents_protobufdata_writes_them():
    decimal = ast.Type("DECIMAL", precision=4, scale=2)
    text = protobuf_types.proto_text([("PRICE", decimal), ("L", ast.Type("ARRAY", element=decimal))])
    assert 'import "confluent/meta.proto";' in text
    assert ('PRICE = 1 [(confluent.field_meta) = { params: [{ key: "precision", value: "4" }, '
            '{ key: "scale", value: "2" }] }];') in text
    read = protobuf_types.to_ksql(Schema(text).message([0]))  # without them: DECIMAL(38, 0)
    assert read.fields == (("PRICE", decimal), ("L", ast.Type("ARRAY", element=decimal)))


def test_imports_are_found_in_a_schema_written_on_one_line_in_either_quotes():
    from kafkasql_magic.formats.protobuf_schema import imports_of

    text = ("syntax = \"proto3\"; import \"confluent/meta.proto\"; import 'confluent/type/decimal.proto'; "
            "message M { confluent.type.Decimal d = 1 [(confluent.field_meta) = { params: [{ key: \"precision\", "
            "value: \"5\" }, { key: \"scale\", value: \"1\" }] }]; }")
    assert imports_of(text) == ["confluent/meta.proto", "confluent/type/decimal.proto"]
    assert protobuf_types.to_ksql(Schema(text).message([0])).fields == (
        ("d", ast.Type("DECIMAL", precision=5, scale=1)),)


def test_a_schema_using_confluents_options_without_importing_them_reads_as_confluents_parser_reads_it():
    # ksqlDB's 'protobuf inference - partial schema' registers this text: no confluent/meta.proto import
    text = ('syntax = "proto3"; import "confluent/type/decimal.proto"; message ConfluentDefault1 {bool c1 = 1; '
            'confluent.type.Decimal c6 = 6 [(confluent.field_meta) = { params: [{ value: "4", key: "precision" }, '
            '{ value: "2", key: "scale" }]}];}')
    assert protobuf_types.to_ksql(Schema(text).message([0])).fields == (
        ("c1", ast.Type("BOOLEAN")), ("c6", ast.Type("DECIMAL", precision=4, scale=2)))
    with pytest.raises(ValueError, match=r"kafkasql_schema.proto:2:"):  # errors keep their lines
        Schema(text.replace("bool c1 = 1;", "\nbool c1 = 1 = 2;")).message([0])


def test_filling_a_message_sets_enums_by_name_and_the_chosen_member_of_a_oneof():
    desc = Schema('''syntax = "proto3"; message M { S s = 1; oneof pick { string a = 2; int64 b = 3; }
        enum S { X = 0; Y = 1; } }''').message([0])
    from google.protobuf import message_factory

    msg = message_factory.GetMessageClass(desc)()
    protobuf_types.fill(msg, {"S": "Y", "PICK_0": {"A": None, "B": 9}})
    assert (msg.s, msg.WhichOneof("pick"), msg.b) == (1, "b", 9)
    with pytest.raises(protobuf_types.ProtobufTypeError, match="`Z` is not a value of enum M.S"):
        protobuf_types.fill(msg, {"S": "Z"})


def test_columns_protobuf_cannot_hold_are_refused_at_create():
    from kafkasql_magic.errors import StatementError
    from kafkasql_magic.formats import Field, lookup

    nested = ast.Type("ARRAY", element=ast.Type("ARRAY", element=INT))
    with pytest.raises(StatementError, match="'PROTOBUF_NOSR' format cannot hold the value columns: "
                                             "column `XS`: PROTOBUF cannot hold an ARRAY of ARRAY"):
        lookup("PROTOBUF_NOSR").validate([Field("XS", nested)], "value", "STREAM")


def test_the_written_proto_is_the_text_ksqldb_registers():
    """ksqlDB's historical plan for an ORDERS stream (a STRUCT inside a STRUCT, a MAP, another STRUCT):
    nested messages numbered in field order after the fields, a MAP as repeated `...Entry` messages."""
    T = ast.Type
    category = T("STRUCT", fields=(("ID", T("BIGINT")), ("NAME", STRING)))
    item = T("STRUCT", fields=(("ITEMID", T("BIGINT")), ("NAME", STRING), ("CATEGORY", category)))
    text = protobuf_types.proto_text([
        ("ORDERTIME", T("BIGINT")), ("ITEMID", item), ("ARRAYCOL", T("ARRAY", element=T("DOUBLE"))),
        ("MAPCOL", T("MAP", key=STRING, value=T("DOUBLE"))),
        ("ADDRESS", T("STRUCT", fields=(("NUMBER", T("BIGINT")), ("CITY", STRING))))])
    assert text == (
        'syntax = "proto3";\n\nmessage ConnectDefault1 {\n  int64 ORDERTIME = 1;\n  ConnectDefault2 ITEMID = 2;\n'
        '  repeated double ARRAYCOL = 3;\n  repeated ConnectDefault4Entry MAPCOL = 4;\n  ConnectDefault5 ADDRESS = 5;\n'
        '\n  message ConnectDefault2 {\n    int64 ITEMID = 1;\n    string NAME = 2;\n    ConnectDefault3 CATEGORY = 3;\n'
        '  \n    message ConnectDefault3 {\n      int64 ID = 1;\n      string NAME = 2;\n    }\n  }\n'
        '  message ConnectDefault4Entry {\n    string key = 1;\n    double value = 2;\n  }\n'
        '  message ConnectDefault5 {\n    int64 NUMBER = 1;\n    string CITY = 2;\n  }\n}\n')


def test_repeated_entry_messages_are_read_and_written_as_a_map():
    """Confluent's ProtobufData takes a repeated `...Entry` message of `key` and `value` for a MAP."""
    fields = [("M", ast.Type("MAP", key=STRING, value=INT))]
    cls = Schema(protobuf_types.proto_text(fields)).message_class([0])
    msg = cls()
    protobuf_types.fill(msg, {"M": [("a", 1), ("b", 2)]})  # Arrow's map values: (key, value) pairs
    assert [(e.key, e.value) for e in msg.M] == [("a", 1), ("b", 2)]
    read = protobuf_types.reader(cls.DESCRIPTOR, ast.Type("STRUCT", fields=tuple(fields)))
    assert read(msg) == {"M": {"a": 1, "b": 2}}


def test_only_protobuf_nosr_may_unwrap_a_single_value():
    """ksqlDB's SerdeFeaturesFactory: PROTOBUF supports WRAP_SINGLES only, PROTOBUF_NOSR both."""
    from kafkasql_magic.dialects.ksql_sources import WRAP_SINGLE_VALUES, check_value_wrapping, with_default_wrapping
    from kafkasql_magic.errors import StatementError
    from kafkasql_magic.formats import FormatSpec

    with pytest.raises(StatementError, match="Format 'PROTOBUF' does not support 'WRAP_SINGLE_VALUE' set to 'false'."):
        check_value_wrapping(FormatSpec("PROTOBUF", {"WRAP_SINGLE_VALUE": "false"}))
    check_value_wrapping(FormatSpec("PROTOBUF_NOSR", {"WRAP_SINGLE_VALUE": "false"}))
    check_value_wrapping(FormatSpec("PROTOBUF", {"WRAP_SINGLE_VALUE": "true"}))
    # the session's default `false` does not reach a format that cannot unwrap (no error, wrapped)
    assert with_default_wrapping(FormatSpec("PROTOBUF"), 1, {WRAP_SINGLE_VALUES: False}) == FormatSpec("PROTOBUF")


def test_sink_rows_of_well_known_types_and_a_map_of_structs_read_back():
    """What a PROTOBUF_NOSR sink writes per row (Arrow's Python values) is what the decoder reads."""
    import datetime as dt
    from decimal import Decimal

    from kafkasql_magic.sinks.encode import protobuf_rows

    T = ast.Type
    fields = (("DEC", T("DECIMAL", precision=4, scale=2)), ("DAY", T("DATE")), ("AT", T("TIME")), ("RAW", T("BYTES")),
              ("M", T("MAP", key=STRING, value=T("STRUCT", fields=(("X", INT),)))))
    row = {"DEC": Decimal("12.34"), "DAY": dt.date(2024, 2, 29), "AT": dt.time(1, 2, 3, 4000), "RAW": b"\x00\xff",
           "M": [("a", {"X": 1})]}
    written = protobuf_rows([row, None], [n for n, _ in fields], False, protobuf_types.proto_text(list(fields)), b"")
    assert written[1] is None
    out = protobuf.decode_batch(pa.array(written, pa.binary()), protobuf.Layout(fields, False, None)).to_pylist()
    assert {k: v for k, v in out[0].items() if k != protobuf.ERROR_FIELD} == {**row, "M": [("a", {"X": 1})]}
