"""DELIMITED: one line of CSV, fields in column order, quoted as ksqlDB writes them.

ksqlDB writes DELIMITED with Apache Commons CSV 1.4 (`CSVFormat.DEFAULT`, quote mode MINIMAL),
whose rule for when a field is quoted is its own (`needs_quotes`): not only a field holding the
delimiter, a quote or a line break, but also one starting with a character up to `#`, ending in
one up to a space, and, first in its record, empty or starting with anything but an ASCII letter
or digit (`"-10"`). A quote inside is doubled; leading and trailing spaces are kept.
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import types
from .base import Decoded, Format, deserialization_error, first_error, json_ready, utf8_check
from .json import CONVERTERS  # bytes are base64 text here too

_CORRUPT = "__corrupt_record"
_DELIMITER_NAMES = {"TAB": "\t", "SPACE": " "}


def needs_quotes(text: str, first: bool, sep: str) -> bool:
    """Commons CSV 1.4's MINIMAL quoting: is `text` written in quotes?"""
    if not text:
        return first
    if first and not (text[0].isascii() and text[0].isalnum()):
        return True
    return text[0] <= "#" or any(c in text for c in ("\r", "\n", '"', sep)) or text[-1] <= " "


def quoted_line(cells: list, sep: str) -> str:
    """One record's text: NULL as nothing, each field quoted where `needs_quotes` says."""
    return sep.join("" if c is None else f'"{c.replace(chr(34), chr(34) * 2)}"' if needs_quotes(c, i == 0, sep)
                    else c for i, c in enumerate(cells))


def delimiter(spec, role: str) -> str:
    option = spec.options.get(f"{role.upper()}_DELIMITER") or spec.options.get("DELIMITER") or ","
    return _DELIMITER_NAMES.get(str(option).upper(), str(option))


class DelimitedFormat(Format):
    name = "DELIMITED"
    supported_types = frozenset(
        {"BOOLEAN", "INT", "BIGINT", "DOUBLE", "DECIMAL", "STRING", "BYTES", "DATE", "TIME", "TIMESTAMP"}
    )

    def unsupported(self, field):
        return f"{super().unsupported(field)}, column: `{field.name}`"  # as ksqlDB's delimited serde says it

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        cells = [None if v is None else str(v).lower() if isinstance(v, bool) else str(json_ready(v)) for v in values]
        return quoted_line(cells, delimiter(spec, role)).encode()

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        text_schema = T.StructType(
            [T.StructField(f"_{i}", T.StringType()) for i in range(len(fields))]
            + [T.StructField(_CORRUPT, T.StringType())]
        )
        parsed = F.from_csv(
            raw.cast("string"),
            text_schema.simpleString()[len("struct<"):-1].replace(":", " "),
            {"sep": delimiter(spec, role), "escape": '"', "mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT},
        )
        columns, checks = [], [
            utf8_check(raw),
            F.when(parsed[_CORRUPT].isNotNull(),
                   F.lit(f"Unexpected field count: expected {len(fields)} delimited fields"))
        ]
        for i, f in enumerate(fields):
            text = parsed[f"_{i}"]
            convert = CONVERTERS.get(f.type.name)
            value = convert(text, f.type) if convert else text.try_cast(types.to_spark(f.type))
            columns.append(value.alias(f.name))
            checks.append(F.when(text.isNotNull() & value.isNull(),
                                 F.concat(F.lit(f"Invalid value for {f.name}: '"), text, F.lit("'"))))
        reason = first_error(checks)
        return Decoded(columns, F.when(reason.isNotNull(), deserialization_error(role, reason)))
