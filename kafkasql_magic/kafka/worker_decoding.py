"""What the reader decodes in its worker, beside the raw records: JSON keys and values of
primitive members (kafka.json_columns) and AVRO keys and values (formats.avro_decode).

Why: a per-record Python UDF hop (AVRO) or Spark's three JSON parses per column cost more than
the fetch itself; the reader already holds each batch as Arrow arrays in a Python worker.
Exactness: JSON is decoded there only where the result is exactly the planner's (a flag per
record; the planner decodes the rest). AVRO runs the very decoding the planner's UDF runs
(`avro_decode.decode_batch`): its struct holds the declared columns and, for a record it
cannot read (wrong magic byte, unknown schema id, bytes left over, truncated), NULLs and the
reason, which the planner turns into the record's processing-log entry.

As source options (plain text): `jsonValueColumns` / `jsonKeyColumns` (JSON lists of [member,
type] pairs) and `secret.avroValueLayout` / `secret.avroKeyLayout` (a JSON layout: the declared
columns, how the writer schema is found, the registry client properties). A layout may hold
credentials (in the registry URL or its properties), so its option name holds "secret", which
Spark masks in plans and the UI.

`rawBytes=undecoded`: the raw key and value are NULL for every record whose JSON roles the
worker decoded (every flag true), as a Python source has no column pruning and the JVM would
take in bytes nobody reads. The planner asks for it only where no such record can fail or be
used raw (engine.analysis.raw_bytes); a flag true says the bytes were there (an object), so
tombstones stay tombstones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields as dataclass_fields
from typing import Mapping

from ..errors import KafkaError
from . import json_columns
from .json_options import json_list

ROLES = ("key", "value")
#: Each role's AVRO struct column (decode_batch's result).
AVRO_COLUMN = {"key": "__avro_key", "value": "__avro_value"}
JSON_OPTION = {"key": "jsonKeyColumns", "value": "jsonValueColumns"}
AVRO_OPTION = {"key": "secret.avroKeyLayout", "value": "secret.avroValueLayout"}
RAW_BYTES_OPTION, UNDECODED_ONLY = "rawBytes", "undecoded"


@dataclass(frozen=True)
class WorkerDecoding:
    """Per role: JSON (member, type) pairs, or an AVRO layout (formats.avro_decode.Layout)."""

    json_key: tuple[tuple[str, str], ...] | None = None
    json_value: tuple[tuple[str, str], ...] | None = None
    avro_key: object | None = None
    avro_value: object | None = None
    #: the raw key and value only for records not decoded here (NULL for the others)
    raw_undecoded_only: bool = False

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in dataclass_fields(self) if f.name != "raw_undecoded_only")

    def json_roles(self) -> tuple[str, ...]:
        """The roles decoded here as JSON (each with its flag column)."""
        return tuple(role for role in ROLES if self.json(role))

    def json(self, role: str):
        return self.json_key if role == "key" else self.json_value

    def avro(self, role: str):
        return self.avro_key if role == "key" else self.avro_value

    def options(self) -> dict[str, str]:
        """The source options saying this (AVRO layouts under masked names)."""
        out: dict[str, str] = {}
        for role in ROLES:
            if self.json(role):
                out[JSON_OPTION[role]] = json.dumps([list(f) for f in self.json(role)])
            layout = self.avro(role)
            if layout is not None:
                out[AVRO_OPTION[role]] = json.dumps(
                    {"fields": [[name, type_to_plain(t)] for name, t in layout.fields], "anonymous": layout.anonymous,
                     "url": layout.url, "inline": layout.inline, "framed": layout.framed,
                     "registry": {name: str(value) for name, value in layout.registry.items()}})
        if self.raw_undecoded_only:
            out[RAW_BYTES_OPTION] = UNDECODED_ONLY
        return out

    def spark_fields(self) -> list:
        """The columns the reader adds, as Spark fields (driver side)."""
        from pyspark.sql import types as T

        from ..formats import Field
        from ..formats.avro import struct_type

        spark_types = {"BOOLEAN": T.BooleanType, "INT": T.IntegerType, "BIGINT": T.LongType, "DOUBLE": T.DoubleType,
                       "STRING": T.StringType}
        out = []
        for role in ROLES:
            pairs = self.json(role)
            if pairs:
                flag, column = json_columns.NAMES[role]
                out += [T.StructField(flag, T.BooleanType())] + [
                    T.StructField(column.format(i), spark_types[t]()) for i, (_, t) in enumerate(pairs)]
            layout = self.avro(role)
            if layout is not None:
                out.append(T.StructField(AVRO_COLUMN[role], struct_type([Field(n, t) for n, t in layout.fields])))
        return out

    def arrow_fields(self) -> list:
        """The same as Arrow fields (worker side)."""
        import pyarrow as pa

        from ..formats.avro_decode import ERROR_FIELD

        out = []
        for role in ROLES:
            if self.json(role):
                out += json_columns.arrow_fields(self.json(role), role)
            layout = self.avro(role)
            if layout is not None:
                target = layout.target()
                out.append(pa.field(AVRO_COLUMN[role], pa.struct(list(target) + [pa.field(ERROR_FIELD, pa.string())])))
        return out

    def decoders(self):
        """A function (keys, values) -> (keys, values, the added columns), for one read (worker
        side); with `raw_undecoded_only`, the keys and values NULL where every JSON flag is true."""
        from ..formats.avro_decode import decode_batch

        steps = []
        for role in ROLES:
            pick = 0 if role == "key" else 1
            if self.json(role):
                decoder = json_columns.Decoder(self.json(role))
                steps.append(lambda arrays, d=decoder, p=pick: d(arrays[p]))
            layout = self.avro(role)
            if layout is not None:
                steps.append(lambda arrays, lay=layout, p=pick: [decode_batch(arrays[p], lay)])
        flags = [i for i, f in enumerate(self.arrow_fields()) if f.name in FLAGS] if self.raw_undecoded_only else []

        def decode(keys, values):
            columns = [column for step in steps for column in step((keys, values))]
            if flags:
                keys, values = undecoded_only(keys, values, [columns[i] for i in flags])
            return keys, values, columns

        return decode


#: The JSON flag columns (True: the worker decoded that role of the record).
FLAGS = frozenset(json_columns.NAMES[role][0] for role in ROLES)


def undecoded_only(keys, values, flags: list):
    """`keys` and `values` (binary Arrow arrays) with NULL where every one of `flags` is true."""
    import pyarrow as pa
    import pyarrow.compute as pc

    decoded = flags[0]
    for flag in flags[1:]:
        decoded = pc.and_(decoded, flag)
    if not pc.any(decoded).as_py():
        return keys, values
    none = pa.scalar(None, pa.binary())
    return pc.if_else(decoded, none, keys), pc.if_else(decoded, none, values)


def parse(options: Mapping[str, str]) -> WorkerDecoding | None:
    """The worker decoding the source options ask for, or None."""
    found = WorkerDecoding(json_key=_json_pairs(options, JSON_OPTION["key"]),
                           json_value=_json_pairs(options, JSON_OPTION["value"]),
                           avro_key=_layout(options, AVRO_OPTION["key"]),
                           avro_value=_layout(options, AVRO_OPTION["value"]),
                           raw_undecoded_only=_raw_bytes(options))
    if found.raw_undecoded_only and not found.json_roles():
        raise KafkaError(f"Option {RAW_BYTES_OPTION}={UNDECODED_ONLY} needs {JSON_OPTION['value']} or "
                         f"{JSON_OPTION['key']}: only records decoded in the worker leave their bytes out")
    return found if found else None


def _raw_bytes(options: Mapping[str, str]) -> bool:
    raw = str(options.get(RAW_BYTES_OPTION) or "all").strip().lower()
    if raw not in ("all", UNDECODED_ONLY):
        raise KafkaError(f"Option {RAW_BYTES_OPTION} must be all or {UNDECODED_ONLY}, not {options.get(RAW_BYTES_OPTION)!r}")
    return raw == UNDECODED_ONLY


def _json_pairs(options: Mapping[str, str], name: str) -> tuple[tuple[str, str], ...] | None:
    pairs = json_list(options, name, lambda pairs: bool(pairs) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and p[1] in json_columns.ARROW_TYPES
        for p in pairs), f"a JSON list of [member, type] pairs (types {', '.join(json_columns.ARROW_TYPES)})")
    return None if pairs is None else tuple((member, type_name) for member, type_name in pairs)


def _layout(options: Mapping[str, str], name: str):
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    from ..formats.avro_decode import Layout

    try:
        plain = json.loads(raw)
        fields = tuple((field_name, type_from_plain(t)) for field_name, t in plain["fields"])
        return Layout(fields, bool(plain["anonymous"]), plain["url"], plain["inline"], bool(plain["framed"]),
                      dict(plain.get("registry") or {}))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # the text is not shown: it may hold secrets
        raise KafkaError(f"Option {name} must be an AVRO layout (fields, anonymous, url, inline, framed): "
                         f"{type(exc).__name__}") from None


def type_to_plain(t) -> dict:
    """An ast.Type as JSON-able data."""
    out: dict = {"name": t.name}
    if t.precision is not None:
        out["precision"], out["scale"] = t.precision, t.scale
    for part in ("element", "key", "value"):
        if getattr(t, part) is not None:
            out[part] = type_to_plain(getattr(t, part))
    if t.fields:
        out["fields"] = [[name, type_to_plain(ft)] for name, ft in t.fields]
    return out


def type_from_plain(plain: dict):
    from ..sql import ast

    parts = {part: type_from_plain(plain[part]) for part in ("element", "key", "value") if part in plain}
    return ast.Type(plain["name"], precision=plain.get("precision"), scale=plain.get("scale"),
                    fields=tuple((name, type_from_plain(ft)) for name, ft in plain.get("fields", ())), **parts)
