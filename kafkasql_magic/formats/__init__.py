"""Serialization formats by name: one module each, looked up in one table."""

from __future__ import annotations

from ..errors import StatementError
from .avro import AvroFormat
from .base import Decoded, Field, Format, FormatSpec
from .delimited import DelimitedFormat
from .json import JsonDocumentFormat, JsonFormat
from .json_sr import JsonSrFormat
from .kafka import KafkaFormat
from .none import NoneFormat
from .protobuf import ProtobufFormat, ProtobufNosrFormat
from .protobuf_descriptors import ProtobufDescriptorsFormat
from .regex import RegexFormat

FORMATS: dict[str, Format] = {f.name: f for f in (
    KafkaFormat(), DelimitedFormat(), JsonFormat(), NoneFormat(), JsonSrFormat(), AvroFormat(),
    JsonDocumentFormat(), ProtobufFormat(), ProtobufNosrFormat(), ProtobufDescriptorsFormat(), RegexFormat())}


def lookup(name: str) -> Format:
    fmt = FORMATS.get(name.upper())
    if fmt is not None:
        return fmt
    raise StatementError(f"Unknown format: {name.upper()}")


__all__ = ["FORMATS", "Decoded", "Field", "Format", "FormatSpec", "lookup"]
