"""A Confluent-framed Avro value that does not decode, in Materialize's words (no Spark)."""

from kafkasql_magic.formats.avro import avro_error_text


def test_the_header_is_checked_first_its_length_then_its_magic_byte():
    assert avro_error_text(b"ab", "Failed to deserialize value: Unknown magic byte! (got 0x61, expected 0x00)") == (
        'avro deserialization error: Confluent-style avro datum is too few bytes: expected at least 5 bytes, got 2 '
        '(original text: ab, original bytes: "6162")')
    assert avro_error_text(b"{\"a\": 1}", "Failed to deserialize value: Unknown magic byte! (got 0x7b, expected 0x00)") \
        == ('avro deserialization error: wrong Confluent-style avro serialization magic: expected 0, got 123 '
            '(original text: {"a": 1}, original bytes: "7b2261223a20317d")')


def test_a_body_that_does_not_decode_names_its_schema_id():
    raw = b"\0\0\0\0\x07\x02\xff"
    reason = "Failed to deserialize value: Error deserializing AVRO message for id 7: record is truncated"
    assert avro_error_text(raw, reason) == (
        'avro deserialization error: unable to decode row (Avro schema id = 7): record is truncated '
        '(original bytes: "000000000702ff")')
    unknown = "Failed to deserialize value: Schema id 7 not found in the schema registry at http://r"
    assert avro_error_text(raw, unknown).startswith(
        "avro deserialization error: failed to resolve Avro schema (id = 7): Schema id 7 not found")
    assert avro_error_text(None, reason) == reason
    assert avro_error_text(raw, None) is None  # a value that decoded
