"""ksqlDB's KAFKA format: Kafka's own serializers, one column, fixed-width big-endian numbers."""

from __future__ import annotations

import struct

from pyspark.sql import functions as F

from . import bytes_codec
from .base import INVALID_UTF8, Decoded, Format, deserialization_error, invalid_utf8

#: ksql type -> (byte width or None for any, decoder, Kafka deserializer name).
DECODERS = {
    "INT": (4, bytes_codec.int_from_bytes, "IntegerDeserializer"),
    "BIGINT": (8, bytes_codec.bigint_from_bytes, "LongDeserializer"),
    "DOUBLE": (8, bytes_codec.double_from_bytes, "DoubleDeserializer"),
    "STRING": (None, lambda b: b.cast("string"), "StringDeserializer"),
    "BYTES": (None, lambda b: b, "ByteArrayDeserializer"),
}


#: ksql type -> Python value to bytes (for INSERT VALUES).
ENCODERS = {
    "INT": lambda v: struct.pack(">i", v),
    "BIGINT": lambda v: struct.pack(">q", v),
    "DOUBLE": lambda v: struct.pack(">d", v),
    "STRING": lambda v: str(v).encode("utf-8"),
    "BYTES": lambda v: bytes(v),
}


class KafkaFormat(Format):
    name = "KAFKA"
    supported_types = frozenset(DECODERS)
    single_column_only = True

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        (field,) = fields
        width, decoder, deserializer = DECODERS[field.type.name]
        value = decoder(raw).alias(field.name)
        if field.type.name == "STRING":
            bad = invalid_utf8(raw)
            return Decoded([F.when(~bad, decoder(raw)).alias(field.name)],
                           F.when(bad, deserialization_error(role, INVALID_UTF8)))
        if width is None:
            return Decoded([value])
        bad = raw.isNotNull() & (F.length(raw) != width)
        error = F.when(
            bad,
            deserialization_error(
                role,
                F.concat(
                    F.lit(f"Size of data received by {deserializer} is not {width} (got "),
                    F.length(raw).cast("string"),
                    F.lit(" bytes)"),
                ),
            ),
        )
        return Decoded([F.when(~bad, value).alias(field.name)], error)

    def encode(self, values, fields, spec, role):
        if not fields or values[0] is None:
            return None
        return ENCODERS[fields[0].type.name](values[0])
