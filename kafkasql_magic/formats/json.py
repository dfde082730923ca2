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
from .base import Decoded, Format, deserialization_error, first_error, json_ready, utf8_check
from .json_errors import json_decode_error

_TEXT_MAP = T.MapType(T.StringType(), T.StringType())
_TEXT_ARRAY = T.ArrayType(T.StringType())


def object_members(text: Column) -> Column:
    """An object's members keyed by lower-cased name; NULL when `text` is not an object."""
    return F.transform_keys(F.from_json(text, _TEXT_MAP), lambda k, v: F.lower(k))


_CORRUPT = "__kafkasql_corrupt_json__"
_CONTAINERS = ("STRUCT", "ARRAY", "MAP")


def spellings(name: str) -> list[str]:
    """The member names tried first for a column: as declared, lower and upper case."""
    return list(dict.fromkeys([name, name.lower(), name.upper()]))


def _parse_object(text: Column, names: list[str]) -> Column:
    tried = list(dict.fromkeys(s for name in names for s in spellings(name)))
    schema = T.StructType([T.StructField(s, T.StringType()) for s in tried] + [T.StructField(_CORRUPT, T.StringType())])
    return F.from_json(text, schema, {"columnNameOfCorruptRecord": _CORRUPT, "mode": "PERMISSIVE"})


def object_fields(text: Column, names: list[str], parsed: Column | None = None) -> tuple[dict[str, Column], Column]:
    """Each column's member text, and whether `text` is not a JSON object.

    One native parse reads the usual spellings of every column (`id`, `ID`); only a column
    none of them finds (another case, absent, or null) falls back to the case-insensitive
    member map, a branch Spark evaluates only for the rows that need it."""
    parsed = _parse_object(text, names) if parsed is None else parsed
    every_member = object_members(text)  # one expression for every column: built once
    members = {}
    for name in names:
        found = F.coalesce(*[parsed[s] for s in spellings(name)])
        members[name] = F.when(found.isNotNull(), found).otherwise(every_member[name.lower()])
    return members, not_an_object(text, parsed)


def not_an_object(text: Column, parsed: Column) -> Column:
    """Whether `text` is not a JSON object (`parsed`: its _parse_object)."""
    return parsed.isNull() | parsed[_CORRUPT].isNotNull() | ~F.ltrim(text).startswith("{")


def _each(members: dict[str, Column], fields) -> list[Column]:
    return [members[f.name] for f in fields]


#: Why a record whose JSON value is followed by more text is refused.
TRAILING_TEXT = "Invalid JSON: text after the end of the value"


def trailing_text(text: Column) -> Column:
    """True when non-blank text follows the JSON value that `text` starts with.

    Spark's JSON reader stops after the first value and ignores the rest, so
    `{"n": 2} trailing` would read as `{"n": 2}`. Wrapped in `[...]`, text after the value
    is an error unless it starts with `]` (the array then closes early); wrapped in
    `{"v": ...}`, unless it starts with `}`. No text can close both, so a text is one
    whole value exactly when the first wrapping is a one-element array and the second
    parses (NULL when `text` is NULL or not JSON at all, which other checks report)."""
    as_array = F.from_json(F.concat(F.lit("["), text, F.lit("]")), _TEXT_ARRAY)
    as_member = F.from_json(F.concat(F.lit('{"v":'), text, F.lit("}")), _TEXT_MAP)
    return (F.size(as_array) != 1) | as_member.isNull()


def anonymous_member(text: Column) -> Column:
    """A bare JSON value (`42`, `"abc"`, `{...}`) as member text, the same shape as above."""
    wrapped = F.concat(F.lit('{"v":'), text, F.lit("}"))
    return F.from_json(wrapped, _TEXT_MAP)["v"]


def _struct(text: Column, t: ast.Type) -> Column:
    members, invalid = object_fields(text, [name for name, _ in t.fields])
    fields = [from_json_text(members[name], ft).alias(name) for name, ft in t.fields]
    return F.when(text.isNotNull() & ~invalid, F.struct(*fields))


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
        """Materialised in stages (see Decoded): the parse, member texts, typed values, then checks."""
        if not fields:
            return Decoded([])
        stage = f"__{role}_json"
        groups, finish = self._stages(raw, fields, spec, role)
        get = lambda n: F.col(f"{stage}_{n}")  # noqa: E731 - each stage is a column
        intermediates = [(f"{stage}_{name}", column) for names, build in groups
                         for name, column in zip(names, build(get))]
        columns, error = finish(get)
        return Decoded(columns, error, intermediates)

    def decode_bound(self, raw, fields, spec, role) -> Column:
        """The same decoding as one struct column (`v0`..`vN`, `error`): each stage bound once per
        record as a lambda variable rather than materialised as a column, so the whole of it sits
        in one expression that Spark evaluates only where it is asked for (a CASE branch)."""
        groups, finish = self._stages(raw, fields, spec, role)

        def bound(at: int, env: dict) -> Column:
            get = lambda name: env[name][name]  # noqa: E731 - each name is a field of its group's struct
            if at == len(groups):
                columns, error = finish(get)
                return F.struct(*[c.alias(f"v{i}") for i, c in enumerate(columns)], error.alias("error"))
            names, build = groups[at]
            value = F.struct(*[column.alias(name) for name, column in zip(names, build(get))])
            return F.transform(F.array(value), lambda x: bound(at + 1, {**env, **{n: x for n in names}}))[0]

        return bound(0, {})

    def _stages(self, raw, fields, spec, role):
        """([(names, build)], finish): groups of named stages, each `build(get)` the group's
        expressions over the earlier stages (`get(name)`), built together so that what they share
        is built once, and `finish(get)` -> (columns, error)."""
        text = raw.cast("string")
        anonymous = self._anonymous(fields, spec, role)
        names = [f.name for f in fields]
        groups: list = []
        if anonymous and fields[0].type.name in _CONTAINERS:  # the text is the member: no wrapper parse
            members = lambda get: {fields[0].name: text}  # noqa: E731
            parse_error = lambda get: F.lit(None)  # noqa: E731 - a text that is not one shows as a conversion error
        elif anonymous:
            members = lambda get: {fields[0].name: anonymous_member(text)}  # noqa: E731
            parse_error = lambda get: F.when(  # noqa: E731
                raw.isNotNull() & get("m0").isNull() & (F.trim(text) != "null"), F.lit("Invalid JSON"))
        else:
            groups.append((["p"], lambda get: [_parse_object(text, names)]))
            members = lambda get: object_fields(text, names, parsed=get("p"))[0]  # noqa: E731
            parse_error = lambda get: F.when(  # noqa: E731
                raw.isNotNull() & not_an_object(text, get("p")), F.lit("Invalid JSON object"))
        groups.append(([f"m{i}" for i in range(len(fields))], lambda get: _each(members(get), fields)))
        groups.append(([f"v{i}" for i in range(len(fields))],
                       lambda get: [from_json_text(get(f"m{i}"), f.type) for i, f in enumerate(fields)]))

        def finish(get):
            columns = [get(f"v{i}").alias(f.name) for i, f in enumerate(fields)]
            checks = [utf8_check(raw), parse_error(get), F.when(raw.isNotNull() & trailing_text(text), F.lit(TRAILING_TEXT))]
            checks += [_conversion_error(get(f"m{i}"), get(f"v{i}"), f.name, f.type) for i, f in enumerate(fields)]
            reason = first_error(checks)
            return columns, F.when(reason.isNotNull(), deserialization_error(role, reason))

        return groups, finish


def jsonb_text(text: Column) -> Column:
    """JSON text as Materialize shows jsonb: compact, an object's members in jsonb's key order (by
    their bytes) and a repeated key's last value only (Spark's variant, parsed with
    `spark.sql.variant.allowDuplicateKeys`: sparkenv); NULL when `text` is not JSON."""
    return F.to_json(F.try_parse_json(text))


def materialize_decode_error(raw: Column, error: Column) -> Column:
    """`error` (set where the value did not decode) in Materialize's words: `Failed to decode
    JSON: expected value at line 1 column 6 (original text: ..., original bytes: ...)`, worked
    out by formats.json_errors for the failed records only."""
    return F.coalesce(F.when(error.isNotNull(), F.udf(json_decode_error, "string")(raw)), error)


class JsonDocumentFormat(Format):
    """Materialize's FORMAT JSON: the whole document as one column of jsonb (its canonical text)."""

    name = "JSON_DOCUMENT"

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        text = raw.cast("string")
        document = jsonb_text(text)
        reason = (F.when(raw.isNull(), F.lit(None))
                  .when(utf8_check(raw).isNotNull(), utf8_check(raw))
                  .when(document.isNull(), F.lit("Invalid JSON"))
                  .when(trailing_text(text), F.lit(TRAILING_TEXT)))
        return Decoded([F.when(reason.isNull(), document).alias(fields[0].name)],
                       F.when(reason.isNotNull(), deserialization_error(role, reason)))

    def encode(self, values, fields, spec, role):
        return None if not fields or values[0] is None else str(values[0]).encode()
