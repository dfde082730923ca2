"""JSON Schema (the JSON_SR format) -> ksql types, for schema inference.

Follows Confluent's JsonSchemaData (which ksqlDB uses through Kafka Connect): the
`connect.type` annotations ksqlDB itself writes decide the width of numbers, and the Connect
logical-type titles give DATE / TIME / TIMESTAMP / DECIMAL; without annotations `integer` is
BIGINT (int64) and `number` is DOUBLE (float64).

- `object` with `properties` -> STRUCT (or the columns, at the root); `object` with only a
  schema in `additionalProperties` (or `connect.type: map`) -> MAP<STRING, _>
- `array` -> ARRAY of `items`; `string` -> STRING (`connect.type: bytes` -> BYTES); `enum` -> STRING
- `integer` -> BIGINT (`connect.type` int8/int16/int32 -> INT); `number` -> DOUBLE; `boolean`
- `oneOf` / `anyOf` of one type and `{"type": "null"}`, or `"type": [T, "null"]` -> T
  (every ksql column is nullable); other unions -> an error naming the field
- local `$ref`s (`#/definitions/...`, `#/$defs/...`) are followed; `format` hints
  (`date-time`, ...) are ignored: the JSON text holds a string, so the column is a STRING,
  as in ksqlDB.
"""

from __future__ import annotations

from .. import types
from ..sql import ast

CONNECT = "org.apache.kafka.connect.data."
CONNECT_INT = {"int8": ast.Type("INT"), "int16": ast.Type("INT"), "int32": ast.Type("INT"),
               "int64": ast.Type("BIGINT")}
CONNECT_LOGICAL = {CONNECT + "Date": ast.Type("DATE"), CONNECT + "Time": ast.Type("TIME"),
                   CONNECT + "Timestamp": ast.Type("TIMESTAMP")}
MAX_DEPTH = 64


class JsonSchemaTypeError(ValueError):
    """A JSON schema (or part of one) that has no ksql type; the message names the field."""


def _where(path: str) -> str:
    return f"field `{path}`" if path else "the schema"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _is_null(node) -> bool:
    return isinstance(node, dict) and (node.get("type") == "null" or node.get("type") == ["null"])


def _resolve(node, root, path: str, depth: int):
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise JsonSchemaTypeError(
                f"JSON schema reference {ref!r} in {_where(path)} is not supported: "
                "only references inside the schema (#/definitions/...) can be followed")
        target = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise JsonSchemaTypeError(f"JSON schema reference {ref!r} in {_where(path)} points nowhere")
            target = target[part]
        node, seen = target, seen + 1
        if seen > MAX_DEPTH or depth > MAX_DEPTH:
            raise JsonSchemaTypeError(f"JSON schema in {_where(path)} is recursive: ksql types cannot be")
    return node


def _decimal(node) -> ast.Type:
    params = node.get("connect.parameters") or {}
    precision = int(params.get("connect.decimal.precision", 64))
    return ast.Type("DECIMAL", precision=min(precision, 38), scale=int(params.get("scale", 0)))


def to_ksql(node, path: str = "", root=None, depth: int = 0) -> ast.Type:
    """The ksql type of JSON schema `node` (struct field names upper-cased, as ksqlDB does)."""
    root = node if root is None else root
    if depth > MAX_DEPTH:
        raise JsonSchemaTypeError(f"JSON schema in {_where(path)} is recursive: ksql types cannot be")
    node = _resolve(node, root, path, depth)
    if node is True or node == {}:
        raise JsonSchemaTypeError(f"JSON schema in {_where(path)} accepts any JSON value: it has no ksql type")
    if not isinstance(node, dict):
        raise JsonSchemaTypeError(f"JSON schema {node!r} in {_where(path)} has no ksql type")
    for combinator in ("oneOf", "anyOf"):
        if combinator in node:
            branches = [b for b in node[combinator] if not _is_null(_resolve(b, root, path, depth))]
            if len(branches) != 1:
                raise JsonSchemaTypeError(
                    f"JSON schema {combinator} with {len(branches)} non-null types in {_where(path)} is not "
                    "supported: only one type together with null can be read")
            return to_ksql(branches[0], path, root, depth + 1)
    if "allOf" in node:
        if len(node["allOf"]) != 1:
            raise JsonSchemaTypeError(f"JSON schema allOf in {_where(path)} is not supported")
        return to_ksql(node["allOf"][0], path, root, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise JsonSchemaTypeError(
                f"JSON schema type {kind} in {_where(path)} is not supported: "
                "only one type together with null can be read")
        kind = kinds[0]
    if kind is None:
        kind = ("object" if "properties" in node or "additionalProperties" in node
                else "array" if "items" in node else "string" if "enum" in node else None)
    title, connect = node.get("title"), node.get("connect.type")
    if title == CONNECT + "Decimal":
        return _decimal(node)
    if title in CONNECT_LOGICAL and kind == "integer":
        return CONNECT_LOGICAL[title]
    if kind == "object":
        return _object(node, path, root, depth)
    if kind == "array":
        if connect == "map":  # Connect writes maps with non-string keys as arrays of key/value
            value = ((node.get("items") or {}).get("properties") or {}).get("value")
            if value is None:
                raise JsonSchemaTypeError(f"JSON schema map in {_where(path)} has no value schema")
            return ast.Type("MAP", key=types.STRING, value=to_ksql(value, path + "{}", root, depth + 1))
        items = node.get("items")
        if items is None or isinstance(items, list):
            raise JsonSchemaTypeError(
                f"JSON schema array in {_where(path)} needs one `items` schema to have a ksql type")
        return ast.Type("ARRAY", element=to_ksql(items, path + "[]", root, depth + 1))
    if kind == "string":
        return types.BYTES if connect == "bytes" else types.STRING
    if kind == "integer":
        return CONNECT_INT.get(connect, types.BIGINT)
    if kind == "number":
        return ast.Type("DOUBLE")
    if kind == "boolean":
        return ast.Type("BOOLEAN")
    raise JsonSchemaTypeError(f"JSON schema type {kind!r} in {_where(path)} has no ksql type")


def _object(node, path: str, root, depth: int) -> ast.Type:
    props = node.get("properties")
    extra = node.get("additionalProperties")
    if node.get("connect.type") == "map" or (not props and isinstance(extra, dict) and extra):
        if not isinstance(extra, dict):
            raise JsonSchemaTypeError(f"JSON schema map in {_where(path)} has no value schema")
        return ast.Type("MAP", key=types.STRING, value=to_ksql(extra, path + "{}", root, depth + 1))
    if not props:
        raise JsonSchemaTypeError(
            f"JSON schema object in {_where(path)} declares no properties: it has no ksql type")
    items = list(props.items())
    if all(isinstance(s, dict) and "connect.index" in s for _, s in items):
        items.sort(key=lambda kv: kv[1]["connect.index"])
    fields, seen = [], {}
    for name, sub in items:
        upper = name.upper()
        if upper in seen:
            raise JsonSchemaTypeError(
                f"JSON schema properties `{seen[upper]}` and `{name}` in {_where(path)} "
                "have the same ksql name")
        seen[upper] = name
        fields.append((upper, to_ksql(sub, _join(path, name), root, depth + 1)))
    return ast.Type("STRUCT", fields=tuple(fields))
