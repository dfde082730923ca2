"""What every serialization format provides: validation at CREATE time, decoding in Spark.

Decoding builds Spark column expressions (no Python per record): typed columns plus one
error column that is non-NULL when the bytes do not match the format, so a bad record is
routed to the processing log instead of failing the query or silently turning to NULLs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..errors import StatementError
from ..sql import ast
from .. import types


@dataclass(frozen=True)
class FormatSpec:
    """A format as declared: name plus its options (delimiter, wrapping, schema id)."""

    name: str
    options: dict = field(default_factory=dict, compare=False)


@dataclass
class Decoded:
    """Typed columns and the error column. `intermediates` are (name, expression) pairs the
    planner materialises first, in order, so an expensive parse referenced by several columns
    runs once per record (Spark does not share work across conditional branches)."""

    columns: list[Column]
    error: Column | None = None
    intermediates: list[tuple[str, Column]] = field(default_factory=list)


@dataclass(frozen=True)
class Field:
    """The part of a declared column a format needs. `sql_type` names Materialize's own type
    where ours holds it as another: `jsonb` (JSON text), `uint8` (a Kafka offset as BIGINT)."""

    name: str
    type: ast.Type
    sql_type: str | None = None


class Format:
    name = ""
    #: Primitive types this format can hold in a key or value column; None means all.
    supported_types: frozenset[str] | None = None
    single_column_only = False

    def validate(self, fields: Sequence[Field], role: str, kind: str) -> None:
        if self.single_column_only and len(fields) > 1:
            raise StatementError(
                f"The '{self.name}' format only supports a single field. Got: "
                + "[" + ", ".join(f"`{f.name}` {types.display(f.type)}" for f in fields) + "]"
            )
        if self.supported_types is not None:
            for f in fields:
                if f.type.name not in self.supported_types:
                    raise StatementError(self.unsupported(f))

    def unsupported(self, field: Field) -> str:
        """ksqlDB's message for a column of a type this format cannot hold: the base type's name
        (`DECIMAL`, `STRUCT`), as its serde factories say it."""
        return f"The '{self.name}' format does not support type '{field.type.name}'"

    def decode(self, raw: Column, fields: Sequence[Field], spec: FormatSpec, role: str) -> Decoded:
        raise NotImplementedError

    def encode(self, values: list, fields: Sequence[Field], spec: FormatSpec, role: str) -> bytes | None:
        """Python values -> record bytes (INSERT VALUES)."""
        raise NotImplementedError


def deserialization_error(role: str, reason: Column | str) -> Column:
    """ksqlDB's processing-log wording for a record whose key or value does not decode."""
    reason_col = F.lit(reason) if isinstance(reason, str) else reason
    return F.concat(F.lit(f"Failed to deserialize {role}: "), reason_col)


#: Why a record whose text is not UTF-8 is refused (Spark would carry the bytes on as a string
#: that fails when turned into Python, or read JSON with U+FFFD in their place).
INVALID_UTF8 = "Invalid UTF-8: the bytes are not text in UTF-8"


def invalid_utf8(raw: Column) -> Column:
    """True when `raw` (binary) is not NULL and not valid UTF-8."""
    return raw.isNotNull() & ~F.is_valid_utf8(raw.cast("string"))


def utf8_check(raw: Column) -> Column:
    """INVALID_UTF8 when `raw` is not valid UTF-8, else NULL (one of a decoder's checks)."""
    return F.when(invalid_utf8(raw), F.lit(INVALID_UTF8))


def first_error(checks: Sequence[Column]) -> Column | None:
    """The first non-NULL error message among `checks`, or None when there are none."""
    if not checks:
        return None
    return checks[0] if len(checks) == 1 else F.coalesce(*checks)


def json_ready(value):
    """A Python value as ksqlDB writes it in JSON (bytes as base64, decimals as numbers)."""
    import base64
    import datetime as dt
    from decimal import Decimal

    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, list):  # an ARRAY, MAP or STRUCT value: its members too
        return [json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    return value
