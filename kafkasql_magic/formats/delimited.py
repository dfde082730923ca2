"""DELIMITED: one line of CSV (quoting per RFC 4180), fields in column order."""

from __future__ import annotations

import csv
import io

from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import types
from .base import Decoded, Format, deserialization_error, first_error, json_ready, utf8_check
from .json import CONVERTERS  # bytes are base64 text here too

_CORRUPT = "__corrupt_record"
_DELIMITER_NAMES = {"TAB": "\t", "SPACE": " "}


def delimiter(spec, role: str) -> str:
    option = spec.options.get(f"{role.upper()}_DELIMITER") or spec.options.get("DELIMITER") or ","
    return _DELIMITER_NAMES.get(str(option).upper(), str(option))


class DelimitedFormat(Format):
    name = "DELIMITED"
    supported_types = frozenset(
        {"BOOLEAN", "INT", "BIGINT", "DOUBLE", "DECIMAL", "STRING", "BYTES", "DATE", "TIME", "TIMESTAMP"}
    )

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        out = io.StringIO()
        cells = ["" if v is None else json_ready(v) for v in values]
        csv.writer(out, delimiter=delimiter(spec, role), lineterminator="").writerow(cells)
        return out.getvalue().encode()

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
            {"sep": delimiter(spec, role), "mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT},
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
