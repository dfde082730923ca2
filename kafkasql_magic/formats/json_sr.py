"""JSON_SR: Confluent-framed JSON (magic byte, schema id, JSON text), decoded natively in Spark.

Decoding strips the 5-byte header and reads the JSON text with `formats/json.py`'s
converters (members matched case-insensitively): no Python per record, and no registry
look-up, since the payload describes itself. A single anonymous column (a key, or a value
with WRAP_SINGLE_VALUE=false) is the whole JSON value, unless the value is an object holding
a member of the column's name (a key written as a one-field record). Writing (INSERT VALUES)
registers a JSON schema under `<topic>-key` / `<topic>-value` through confluent-kafka's
JSONSerializer.
"""

from __future__ import annotations

import datetime as dt
import json as _json

from pyspark.sql import functions as F

from .. import types
from ..sql import ast
from . import schema_registry as sr
from .base import Decoded, Format, deserialization_error, first_error, json_ready, utf8_check
from .json import TRAILING_TEXT, JsonFormat, anonymous_member, from_json_text, object_members, trailing_text


def _conversion_error(member, value, name: str, t: ast.Type):
    return F.when(member.isNotNull() & value.isNull(), F.concat(
        F.lit("Can't convert type. sourceType: "), F.substring(member, 1, 40),
        F.lit(f", requiredType: {types.display(t)}, path: $.{name}")))


class JsonSrFormat(Format):
    name = "JSON_SR"

    def check_spec(self, spec) -> None:
        """CREATE-time check (needs the spec, which `validate` does not get)."""
        sr.registry_url(spec, self.name)

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        sr.registry_url(spec, self.name)
        text = sr.payload(raw).cast("string")
        obj = object_members(text)
        if JsonFormat._anonymous(fields, spec, role):
            (f,) = fields
            bare = anonymous_member(text)
            member = bare
            if f.type.name != "STRUCT":
                named = F.when(obj.isNotNull() & F.map_contains_key(obj, F.lit(f.name.lower())), obj[f.name.lower()])
                member = F.coalesce(named, bare)
            members = {f.name: member}
            parse_error = F.when(text.isNotNull() & bare.isNull() & (F.trim(text) != "null"), F.lit("Invalid JSON"))
        else:
            members = {f.name: obj[f.name.lower()] for f in fields}
            parse_error = F.when(text.isNotNull() & obj.isNull(), F.lit("Invalid JSON object"))
        columns, checks = [], [sr.framing_error(raw), utf8_check(sr.payload(raw)), parse_error,
                               F.when(text.isNotNull() & trailing_text(text), F.lit(TRAILING_TEXT))]
        for f in fields:
            value = from_json_text(members[f.name], f.type)
            columns.append(value.alias(f.name))
            checks.append(_conversion_error(members[f.name], value, f.name, f.type))
        reason = first_error(checks)
        return Decoded(columns, F.when(reason.isNotNull(), deserialization_error(role, reason)))

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        anonymous = JsonFormat._anonymous(fields, spec, role)
        if anonymous and values[0] is None:
            return None
        if anonymous:
            schema, datum = optional(json_schema(fields[0].type)), json_value(values[0], fields[0].type)
        else:
            struct = ast.Type("STRUCT", fields=tuple((f.name, f.type) for f in fields))
            schema = {**json_schema(struct), "title": "KsqlDataSourceSchema"}
            datum = {f.name: json_value(v, f.type) for f, v in zip(fields, values)}
        return sr.serialize("JSON", spec, self.name, role, _json.dumps(schema), datum)


# ---------------------------------------------------------------- ksql -> JSON schema
_CONNECT = "org.apache.kafka.connect.data."
JSON_SCHEMAS = {
    "BOOLEAN": {"type": "boolean"},
    "INT": {"type": "integer", "connect.type": "int32"},
    "BIGINT": {"type": "integer", "connect.type": "int64"},
    "DOUBLE": {"type": "number", "connect.type": "float64"},
    "STRING": {"type": "string"},
    "BYTES": {"type": "string", "connect.type": "bytes"},
    "DATE": {"type": "integer", "connect.type": "int32", "title": _CONNECT + "Date"},
    "TIME": {"type": "integer", "connect.type": "int32", "title": _CONNECT + "Time"},
    "TIMESTAMP": {"type": "integer", "connect.type": "int64", "title": _CONNECT + "Timestamp"},
}


def optional(schema: dict) -> dict:
    return {"oneOf": [{"type": "null"}, schema]}


def json_schema(t: ast.Type) -> dict:
    """The JSON schema (with Kafka Connect annotations, as ksqlDB writes) of ksql type `t`."""
    if t.name == "STRUCT":
        return {"type": "object", "properties": {
            n: {**optional(json_schema(ft)), "connect.index": i} for i, (n, ft) in enumerate(t.fields)}}
    if t.name == "ARRAY":
        return {"type": "array", "items": optional(json_schema(t.element))}
    if t.name == "MAP":
        return {"type": "object", "connect.type": "map", "additionalProperties": optional(json_schema(t.value))}
    if t.name == "DECIMAL":
        return {"type": "number", "connect.type": "bytes", "title": _CONNECT + "Decimal",
                "connect.parameters": {"scale": str(t.scale or 0), "connect.decimal.precision": str(t.precision or 10)}}
    return dict(JSON_SCHEMAS[t.name])


def json_value(value, t: ast.Type):
    """A Python value as ksqlDB writes it in JSON_SR (matching `json_schema(t)`)."""
    if value is None:
        return None
    if t.name == "ARRAY":
        return [json_value(v, t.element) for v in value]
    if t.name == "MAP":
        return {str(k): json_value(v, t.value) for k, v in value.items()}
    if t.name == "STRUCT":
        by_lower = {str(k).lower(): v for k, v in value.items()}
        return {n: json_value(value.get(n, by_lower.get(n.lower())), ft) for n, ft in t.fields}
    if t.name == "TIME" and isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if t.name == "TIMESTAMP" and isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    if t.name == "DOUBLE":
        return float(value)
    return json_ready(value)
