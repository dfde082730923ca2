"""JSON: objects matched to columns case-insensitively, as ksqlDB does.

Spark's JSON reader matches field names exactly, so an object is first read as a
map<string, string> of its members (nested values stay JSON text) with lower-cased keys,
and each column is then converted from its member's text. It is all native Spark.
"""

from __future__ import annotations

import json
from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import types
from ..sql import ast
from .base import Decoded, Format, deserialization_error, first_error, json_ready

_TEXT_MAP = T.MapType(T.StringType(), T.StringType())
_TEXT_ARRAY = T.ArrayType(T.StringType())


def object_members(text: Column) -> Column:
    """An object's members keyed by lower-cased name; NULL when `text` is not an object."""
    return F.transform_keys(F.from_json(text, _TEXT_MAP), lambda k, v: F.lower(k))


def anonymous_member(text: Column) -> Column:
    """A bare JSON value (`42`, `"abc"`, `{...}`) as member text, the same shape as above."""
    wrapped = F.concat(F.lit('{"v":'), text, F.lit("}"))
    return F.from_json(wrapped, _TEXT_MAP)["v"]


def _struct(text: Column, t: ast.Type) -> Column:
    members = object_members(text)
    fields = [from_json_text(members[name.lower()], ft).alias(name) for name, ft in t.fields]
    return F.when(members.isNotNull(), F.struct(*fields))


def _array(text: Column, t: ast.Type) -> Column:
    return F.transform(F.from_json(text, _TEXT_ARRAY), lambda e: from_json_text(e, t.element))


def _map(text: Column, t: ast.Type) -> Column:
    return F.transform_values(F.from_json(text, _TEXT_MAP), lambda k, v: from_json_text(v, t.value))


def _timestamp(text: Column, t: ast.Type) -> Column:
    return F.coalesce(F.timestamp_millis(text.try_cast("bigint")), text.try_cast("timestamp"))


def _date(text: Column, t: ast.Type) -> Column:
    return F.coalesce(F.date_from_unix_date(text.try_cast("int")), text.try_cast("date"))


def _time(text: Column, t: ast.Type) -> Column:
    return F.coalesce(F.time_from_millis(text.try_cast("bigint")), text.try_cast("time(3)"))


#: ksql type -> converter from a JSON member's text to the typed value.
CONVERTERS: dict[str, Callable[[Column, ast.Type], Column]] = {
    "STRING": lambda text, t: text,
    "BYTES": lambda text, t: F.try_to_binary(text, F.lit("base64")),
    "STRUCT": _struct,
    "ARRAY": _array,
    "MAP": _map,
    "TIMESTAMP": _timestamp,
    "DATE": _date,
    "TIME": _time,
}


def from_json_text(text: Column, t: ast.Type) -> Column:
    convert = CONVERTERS.get(t.name)
    if convert is None:
        return text.try_cast(types.to_spark(t))
    return convert(text, t)


def _conversion_error(member: Column, value: Column, name: str, t: ast.Type) -> Column:
    return F.when(
        member.isNotNull() & value.isNull(),
        F.concat(
            F.lit("Can't convert type. sourceType: "),
            F.substring(member, 1, 40),
            F.lit(f", requiredType: {types.display(t)}, path: $.{name}"),
        ),
    )


class JsonFormat(Format):
    name = "JSON"

    @staticmethod
    def _anonymous(fields, spec, role) -> bool:
        """A single key column, or an unwrapped single value, is a bare JSON value."""
        return len(fields) == 1 and (
            role == "key" or str(spec.options.get("WRAP_SINGLE_VALUE", "true")).lower() == "false")

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        if self._anonymous(fields, spec, role):
            return None if values[0] is None else json.dumps(json_ready(values[0])).encode()
        return json.dumps({f.name: json_ready(v) for f, v in zip(fields, values)}).encode()

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        text = raw.cast("string")
        anonymous = self._anonymous(fields, spec, role)
        if anonymous:
            members = {fields[0].name: anonymous_member(text)}
            parse_error = F.when(raw.isNotNull() & members[fields[0].name].isNull() & (F.trim(text) != "null"),
                                 F.lit("Invalid JSON"))
        else:
            obj = object_members(text)
            members = {f.name: obj[f.name.lower()] for f in fields}
            parse_error = F.when(raw.isNotNull() & obj.isNull(), F.lit("Invalid JSON object"))
        columns, checks = [], [parse_error]
        for f in fields:
            value = from_json_text(members[f.name], f.type)
            columns.append(value.alias(f.name))
            checks.append(_conversion_error(members[f.name], value, f.name, f.type))
        reason = first_error(checks)
        return Decoded(columns, F.when(reason.isNotNull(), deserialization_error(role, reason)))


class JsonDocumentFormat(Format):
    """Materialize's FORMAT JSON: the whole document as one column of JSON text (jsonb)."""

    name = "JSON_DOCUMENT"

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        text = raw.cast("string")
        invalid = raw.isNotNull() & F.try_parse_json(text).isNull() & (F.trim(text) != "null")
        return Decoded([F.when(~invalid, text).alias(fields[0].name)],
                       F.when(invalid, deserialization_error(role, F.lit("Invalid JSON"))))

    def encode(self, values, fields, spec, role):
        return None if not fields or values[0] is None else str(values[0]).encode()
