"""Avro <-> ksql types, and how an Avro schema is read into declared ksql columns via Arrow.

- `to_ksql(schema)` / `columns(schema)`: the ksql type of an Avro schema (schema inference):
  records -> STRUCT, arrays -> ARRAY, maps -> MAP<STRING, _>, enums -> STRING, unions with
  null -> the nullable branch, other unions -> `AvroTypeError` naming the field; logical types
  decimal / date / time-* / timestamp-* -> DECIMAL / DATE / TIME / TIMESTAMP.
- `from_ksql(type)` / `write_schema(fields, anonymous)`: the Avro schema ksqlDB would write.
- `plan(writer, type)`: the Arrow type fastavro's values are built into (`natural`) and a
  vectorised `conform` turning that array into the Spark-ready Arrow array of the declared
  type (field names matched case-insensitively, date/time/timestamp ints -> Arrow temporal
  types, numeric widening). Readers strip those logical types (`reading_schema`) so fastavro
  hands back plain ints and Arrow does the conversion in bulk.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Callable

from .. import types
from ..sql import ast


class AvroTypeError(ValueError):
    """An Avro schema that has no ksql type, or cannot be read as the declared one."""


PRIMITIVES: dict[str, ast.Type] = {
    "boolean": ast.Type("BOOLEAN"), "int": ast.Type("INT"), "long": ast.Type("BIGINT"),
    "float": ast.Type("DOUBLE"), "double": ast.Type("DOUBLE"), "string": ast.Type("STRING"),
    "bytes": ast.Type("BYTES"), "enum": ast.Type("STRING"), "fixed": ast.Type("BYTES"),
}
LOGICAL: dict[str, ast.Type] = {
    "date": ast.Type("DATE"), "time-millis": ast.Type("TIME"), "time-micros": ast.Type("TIME"),
    "timestamp-millis": ast.Type("TIMESTAMP"), "timestamp-micros": ast.Type("TIMESTAMP"),
    "local-timestamp-millis": ast.Type("TIMESTAMP"), "local-timestamp-micros": ast.Type("TIMESTAMP"),
    "uuid": ast.Type("STRING"),
}
#: Logical types read as their underlying primitive and converted in Arrow (decimal stays).
STRIPPED_LOGICAL = frozenset(LOGICAL)


# ---------------------------------------------------------------- inspecting Avro schemas
def kind(schema) -> str:
    """The logical type if it is one we know, else the Avro type name."""
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, str):
        return schema
    logical = schema.get("logicalType")
    if logical == "decimal" and schema.get("type") in ("bytes", "fixed"):
        return "decimal"
    if logical in LOGICAL:
        return logical
    t = schema.get("type")
    return kind(t) if isinstance(t, (dict, list)) else t


def describe(schema) -> str:
    if isinstance(schema, list):
        return "union [" + ", ".join(describe(b) for b in schema) + "]"
    k = kind(schema)
    if k in ("record", "enum", "fixed"):
        return f"{k} {schema.get('name')}"
    if k == "array":
        return f"array<{describe(schema['items'])}>"
    if k == "map":
        return f"map<{describe(schema['values'])}>"
    return k


def non_null(schema, path: str):
    """`schema` without a null branch; AvroTypeError for unions of several types."""
    if isinstance(schema, dict) and isinstance(schema.get("type"), (list, dict)):
        schema = schema["type"]
    if not isinstance(schema, list):
        return schema
    branches = [b for b in schema if b != "null"]
    if len(branches) == 1:
        return non_null(branches[0], path)
    where = f"field `{path}`" if path else "the schema"
    raise AvroTypeError(f"Avro {describe(schema)} in {where} is not supported: "
                        "only a union of one type with null can be read")


def is_record(schema) -> bool:
    try:
        return kind(non_null(schema, "")) == "record"
    except AvroTypeError:
        return False


def find_field(record, name: str):
    """The record's field named `name`: exact match first, then case-insensitive."""
    fields = record.get("fields", [])
    for f in fields:
        if f["name"] == name:
            return f
    low = name.lower()
    return next((f for f in fields if f["name"].lower() == low), None)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---------------------------------------------------------------- Avro -> ksql (inference)
def to_ksql(schema, path: str = "") -> ast.Type:
    s = non_null(schema, path)
    k = kind(s)
    if k == "record":
        return ast.Type("STRUCT", fields=tuple(
            (f["name"], to_ksql(f["type"], _join(path, f["name"]))) for f in s["fields"]))
    if k == "array":
        return ast.Type("ARRAY", element=to_ksql(s["items"], path + "[]"))
    if k == "map":
        return ast.Type("MAP", key=types.STRING, value=to_ksql(s["values"], path + "{}"))
    if k == "decimal":
        return ast.Type("DECIMAL", precision=int(s["precision"]), scale=int(s.get("scale", 0)))
    found = LOGICAL.get(k) or PRIMITIVES.get(k)
    if found is None:
        raise AvroTypeError(f"Avro type {describe(s)} in field `{path or '<root>'}` has no ksql type")
    return found


def columns(schema, anonymous_name: str = "ROWVAL") -> list[tuple[str, ast.Type]]:
    """Columns a schema declares: a record's fields, or one anonymous column."""
    if is_record(schema):
        return list(to_ksql(schema).fields)
    return [(anonymous_name, to_ksql(schema))]


# ---------------------------------------------------------------- ksql -> Avro (writing)
KSQL_TO_AVRO = {
    "BOOLEAN": "boolean", "INT": "int", "BIGINT": "long", "DOUBLE": "double", "STRING": "string",
    "BYTES": "bytes", "DATE": {"type": "int", "logicalType": "date"},
    "TIME": {"type": "int", "logicalType": "time-millis"},
    "TIMESTAMP": {"type": "long", "logicalType": "timestamp-millis"},
}
RECORD_NAME, NAMESPACE = "KsqlDataSourceSchema", "io.confluent.ksql.avro_schemas"


def from_ksql(t: ast.Type, name: str = RECORD_NAME):
    """The (non-null) Avro schema of ksql type `t`; STRUCTs are records named after `name`."""
    if t.name == "STRUCT":
        return {"type": "record", "name": name, "fields": [
            {"name": fname, "type": ["null", from_ksql(ft, f"{name}_{fname}")], "default": None}
            for fname, ft in t.fields]}
    if t.name == "ARRAY":
        return {"type": "array", "items": ["null", from_ksql(t.element, name)]}
    if t.name == "MAP":
        return {"type": "map", "values": ["null", from_ksql(t.value, name)]}
    if t.name == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision or 10, "scale": t.scale or 0}
    return copy.deepcopy(KSQL_TO_AVRO[t.name])


def write_schema(fields, anonymous: bool, name: str = RECORD_NAME) -> dict | list:
    """The schema a key or value is written with: a record of optional fields, or one optional value."""
    if anonymous:
        (f,) = fields
        return ["null", from_ksql(f.type, name)]
    record = from_ksql(ast.Type("STRUCT", fields=tuple((f.name, f.type) for f in fields)), name)
    return {**record, "namespace": NAMESPACE}


# ---------------------------------------------------------------- parsing writer schemas
def reading_schema(schema):
    """`schema` with date/time/timestamp/uuid logical types removed (read as plain ints/strings)."""
    if isinstance(schema, list):
        return [reading_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "logicalType" and v in STRIPPED_LOGICAL:
            continue
        if k in ("type", "items", "values"):
            v = reading_schema(v)
        elif k == "fields":
            v = [{**f, "type": reading_schema(f["type"])} for f in v]
        out[k] = v
    return out


#: What a complex Avro type must hold -> Materialize's message when it does not (mz_avro's).
REQUIRED = {"record": ("fields", "No `fields` in record"), "error": ("fields", "No `fields` in record"),
            "enum": ("symbols", "No `symbols` field in enum"), "array": ("items", "No `items` in array"),
            "map": ("values", "No `values` in map"), "fixed": ("size", "No `size` in fixed")}


def schema_problem(schema) -> str | None:
    """Why `schema` (parsed JSON) is no Avro schema, in Materialize's words (mz_avro's parser:
    "No `fields` in record", "Unknown type: nosuch"), or None when it is one."""
    import fastavro
    from fastavro.schema import SchemaParseException, UnknownType

    problem = _missing_part(schema)
    if problem is not None:
        return problem
    try:
        fastavro.parse_schema(schema, {})
    except UnknownType as exc:
        return f"Unknown type: {exc.name}"
    except SchemaParseException as exc:
        return str(exc)
    return None


def _missing_part(schema) -> str | None:
    if isinstance(schema, list):
        return next((p for p in map(_missing_part, schema) if p is not None), None)
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind is None:
        return "No `type` in complex type"
    if not isinstance(kind, str):
        return _missing_part(kind)
    part, message = REQUIRED.get(kind, (None, None))
    if part is not None and (part not in schema or (part == "fields" and not isinstance(schema[part], list))):
        return message
    inner = [f.get("type") for f in schema.get("fields") or () if isinstance(f, dict)] if part == "fields" else (
        [schema[part]] if part in ("items", "values") else [])
    return next((p for p in map(_missing_part, inner) if p is not None), None)


def parse_writer(text: str, references: tuple[str, ...] = ()):
    """(schema for fastavro reading, expanded schema for planning) of a registered schema."""
    import fastavro

    raw = json.loads(text)
    refs = [json.loads(r) for r in references]
    read_names: dict = {}
    plan_names: dict = {}
    for ref in refs:
        fastavro.parse_schema(reading_schema(ref), read_names)
        fastavro.parse_schema(ref, plan_names)
    parsed = fastavro.parse_schema(reading_schema(raw), read_names)
    expanded = fastavro.parse_schema(raw, plan_names, expand=True)
    return parsed, expanded


# ---------------------------------------------------------------- Avro -> Arrow plan
#: Declared ksql type -> Avro kinds it can be read from.
ACCEPTS: dict[str, frozenset[str]] = {
    "BOOLEAN": frozenset({"boolean"}),
    "INT": frozenset({"int", "date", "time-millis"}),
    "BIGINT": frozenset({"int", "long", "time-micros", "timestamp-millis", "timestamp-micros",
                         "local-timestamp-millis", "local-timestamp-micros"}),
    "DOUBLE": frozenset({"int", "long", "float", "double", "decimal"}),
    "DECIMAL": frozenset({"decimal", "int", "long"}),
    "STRING": frozenset({"string", "enum", "uuid"}),
    "BYTES": frozenset({"bytes", "fixed"}),
    "DATE": frozenset({"date", "int"}),
    "TIME": frozenset({"time-millis", "time-micros"}),
    "TIMESTAMP": frozenset({"timestamp-millis", "timestamp-micros", "local-timestamp-millis",
                            "local-timestamp-micros", "long"}),
}


@dataclass
class Plan:
    natural: object  # pa.DataType fastavro's values are built into
    target: object  # pa.DataType Spark expects
    conform: Callable  # pa.Array(natural) -> pa.Array(target)


def arrow_type(t: ast.Type):
    """The Arrow type Spark exchanges for ksql type `t`."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(types.to_spark(t), timezone="UTC")


def _natural_primitive(k: str, s):
    import pyarrow as pa

    if k == "decimal":
        p, sc = int(s["precision"]), int(s.get("scale", 0))
        return pa.decimal128(p, sc) if p <= 38 else pa.decimal256(p, sc)
    return {
        "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
        "double": pa.float64(), "string": pa.string(), "enum": pa.string(), "uuid": pa.string(),
        "bytes": pa.binary(), "fixed": pa.binary(), "date": pa.int32(), "time-millis": pa.int32(),
        "time-micros": pa.int64(), "timestamp-millis": pa.int64(), "timestamp-micros": pa.int64(),
        "local-timestamp-millis": pa.int64(), "local-timestamp-micros": pa.int64(),
    }[k]


def _via(*steps):
    """A conversion casting through Arrow types in order (e.g. int64 -> timestamp[ms] -> [us])."""
    def convert(arr):
        for step in steps:
            arr = arr.cast(step)
        return arr
    return convert


def _primitive_conform(k: str, t: ast.Type, target):
    import pyarrow as pa

    if t.name == "DATE":
        return _via(pa.date32())
    if t.name == "TIME":
        unit = pa.time32("ms") if k == "time-millis" else pa.time64("us")
        return _via(unit, target)
    if t.name == "TIMESTAMP":
        unit = "us" if k.endswith("micros") else "ms"
        return _via(pa.timestamp(unit, tz="UTC"), target)
    if t.name == "DECIMAL" and k in ("int", "long"):
        # Arrow checks int -> decimal by type (19 digits); go wide, then check values
        return _via(pa.decimal128(38, min(t.scale or 0, 18)), target)
    return lambda arr: arr if arr.type == target else arr.cast(target)


def plan(writer, t: ast.Type, path: str = "") -> Plan:
    """How values of Avro schema `writer` become Arrow values of ksql type `t`."""
    import pyarrow as pa

    s = non_null(writer, path)
    k = kind(s)
    target = arrow_type(t)
    where = f"field `{path}`" if path else "the schema"
    mismatch = AvroTypeError(f"Avro type {describe(s)} in {where} cannot be read as {types.display(t)}")
    if t.name == "STRUCT":
        if k != "record":
            raise mismatch
        return _struct_plan(s, t, path, target)
    if t.name == "ARRAY":
        if k != "array":
            raise mismatch
        inner = plan(s["items"], t.element, path + "[]")

        def conform_list(arr):
            mask = arr.is_null() if arr.null_count else None
            return pa.ListArray.from_arrays(arr.offsets, inner.conform(arr.values), type=target, mask=mask)
        return Plan(pa.list_(inner.natural), target, conform_list)
    if t.name == "MAP":
        if k != "map":
            raise mismatch
        inner = plan(s["values"], t.value, path + "{}")
        key_target = target.key_type

        def conform_map(arr):
            mask = arr.is_null() if arr.null_count else None
            keys = arr.keys if arr.keys.type == key_target else arr.keys.cast(key_target)
            return pa.MapArray.from_arrays(arr.offsets, keys, inner.conform(arr.items), type=target, mask=mask)
        return Plan(pa.map_(pa.string(), inner.natural), target, conform_map)
    if k not in ACCEPTS.get(t.name, ()):
        raise mismatch
    return Plan(_natural_primitive(k, s), target, _primitive_conform(k, t, target))


def _struct_plan(record, t: ast.Type, path: str, target) -> Plan:
    import pyarrow as pa

    natural_fields, slots = [], []
    for name, ftype in t.fields:
        wf = find_field(record, name)
        if wf is None:
            slots.append((None, None, arrow_type(ftype)))
            continue
        sub = plan(wf["type"], ftype, _join(path, name))
        slots.append((len(natural_fields), sub, sub.target))
        natural_fields.append(pa.field(wf["name"], sub.natural))
    target_fields = list(target)

    def conform_struct(arr):
        children = arr.flatten()
        out = [sub.conform(children[i]) if i is not None else pa.nulls(len(arr), tt) for i, sub, tt in slots]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(out, fields=target_fields, mask=mask)
    return Plan(pa.struct(natural_fields), target, conform_struct)
