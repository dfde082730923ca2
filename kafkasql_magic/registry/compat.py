"""Avro schemas for the embedded registry: canonical form and compatibility.

`AvroSchema(text, references)` normalises a schema: named types get their full names (the
`namespace` attribute is folded into `name`), later uses of a named type are its full name,
and `{"type": "int"}` without other attributes becomes `"int"`. Its `canonical` text (sorted
keys, no whitespace) keeps defaults, docs, aliases and logical types, so two schemas are the
same schema exactly when their canonical texts are equal (field, symbol and branch order
matter, as they do on the wire).

Compatibility follows Avro's schema resolution, as Apache Avro's `SchemaCompatibility` (and
so Confluent Schema Registry) implements it: `incompatibilities(reader, writer)` lists why
data written with `writer` cannot be read with `reader` (empty: it can).

- primitives match themselves; promotions int->long->float->double (int and long to float
  and double too), string<->bytes;
- records, enums and fixed match by unqualified name or a reader alias of the writer's full
  name; fixed sizes must agree;
- a reader field found in the writer (by name, then by the reader field's aliases) must be
  readable; one missing in the writer needs a default; writer-only fields are skipped;
- every writer enum symbol must be a reader symbol, unless the reader enum has a default;
- arrays and maps compare items and values;
- a writer union: every branch must be readable; a reader union: some branch must read the
  writer's type.

Levels (`check`): BACKWARD reads old data with the new schema (reader = new), FORWARD the
reverse, FULL both; the *_TRANSITIVE levels check every earlier version, the others the
latest one; NONE checks nothing.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")
# (reader, writer) pairs that Avro resolves by promotion.
PROMOTIONS = frozenset({
    ("long", "int"), ("float", "int"), ("float", "long"), ("double", "int"), ("double", "long"),
    ("double", "float"), ("string", "bytes"), ("bytes", "string"),
})


class AvroSchemaError(ValueError):
    """Text that is not an Avro schema."""


def _fullname(name: str, namespace: str | None, enclosing: str) -> tuple[str, str]:
    """(full name, namespace for nested definitions) of a named type."""
    if not isinstance(name, str) or not name:
        raise AvroSchemaError(f"Invalid name {name!r}")
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    space = enclosing if namespace is None else namespace
    return (f"{space}.{name}" if space else name), space


class _Normaliser:
    def __init__(self, named: dict):
        self.named = named  # full name -> normalised definition (shared with references)

    def ref(self, name: str, space: str) -> str:
        if "." in name:
            return name
        qualified = f"{space}.{name}" if space else name
        if qualified in self.named or name not in self.named:
            return qualified
        return name  # Avro falls back to the null namespace

    def norm(self, s, space: str = ""):
        if isinstance(s, str):
            return s if s in PRIMITIVES else self.ref(s, space)
        if isinstance(s, list):
            return [self.norm(branch, space) for branch in s]
        if not isinstance(s, dict) or "type" not in s:
            raise AvroSchemaError(f"Not an Avro schema: {json.dumps(s)[:200]}")
        t = s["type"]
        if isinstance(t, str) and t in PRIMITIVES:
            extra = {k: v for k, v in s.items() if k != "type"}
            return {"type": t, **extra} if extra else t
        if isinstance(t, str) and t in NAMED:
            full, inner = _fullname(s.get("name"), s.get("namespace"), space)
            node = {k: v for k, v in s.items() if k not in ("namespace", "fields", "aliases")}
            node["name"] = full
            if "aliases" in s:
                node["aliases"] = [_fullname(a, None, inner)[0] for a in s["aliases"]]
            self.named[full] = node  # before the fields: a record may refer to itself
            if t in ("record", "error"):
                fields = s.get("fields")
                if not isinstance(fields, list):
                    raise AvroSchemaError(f"Record {full} has no fields list")
                node["fields"] = [self.field(f, inner) for f in fields]
            return node
        if t == "array":
            return {**s, "items": self.norm(s.get("items"), space)}
        if t == "map":
            return {**s, "values": self.norm(s.get("values"), space)}
        return self.norm(t, space)  # {"type": <schema>} or {"type": "com.x.Named"}

    def field(self, f, space: str) -> dict:
        if not isinstance(f, dict) or "name" not in f or "type" not in f:
            raise AvroSchemaError(f"Invalid field {json.dumps(f)[:200]}")
        return {**f, "type": self.norm(f["type"], space)}


class AvroSchema:
    """A normalised Avro schema; `references` are the texts of the schemas it refers to,
    dependencies first (their named types become visible to this one)."""

    def __init__(self, text: str | dict | list, references: Iterable[str] = ()):
        self.named: dict[str, object] = {}
        norm = _Normaliser(self.named)
        try:
            for ref in references:
                norm.norm(json.loads(ref) if isinstance(ref, str) else ref)
            raw = json.loads(text) if isinstance(text, str) else text
            self.root = norm.norm(raw)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSONDecodeError too
            raise AvroSchemaError(str(exc)) from exc
        self.canonical = json.dumps(self.root, sort_keys=True, separators=(",", ":"))

    def __eq__(self, other) -> bool:
        return isinstance(other, AvroSchema) and other.canonical == self.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __repr__(self) -> str:
        return f"AvroSchema({self.canonical[:80]})"


# ------------------------------------------------------------------------- resolution
def _kind(node) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, dict):
        return node["type"]
    return node  # a primitive name


def _simple(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Checker:
    def __init__(self, reader: AvroSchema, writer: AvroSchema, names: tuple[str, str]):
        self.rnamed, self.wnamed = reader.named, writer.named
        self.rname, self.wname = names  # how messages call the reader and the writer
        self.in_progress: set[tuple[str, str]] = set()

    def resolve(self, node, named):
        if isinstance(node, str) and node not in PRIMITIVES:
            if node not in named:
                raise AvroSchemaError(f"Unknown type {node!r}")
            return named[node]
        if isinstance(node, dict) and node["type"] in PRIMITIVES:
            return node["type"]  # logical types resolve as their underlying type
        return node

    def problem(self, error_type: str, path: str, description: str, info: str) -> str:
        return (f"{{errorType:'{error_type}', description:'{description}', "
                f"additionalInfo:'{info}'}}")

    def names_match(self, r: dict, w: dict) -> bool:
        return _simple(r["name"]) == _simple(w["name"]) or w["name"] in r.get("aliases", ())

    def check(self, reader, writer, path: str) -> list[str]:
        r = self.resolve(reader, self.rnamed)
        w = self.resolve(writer, self.wnamed)
        rk, wk = _kind(r), _kind(w)
        if wk == "union":
            out = []
            for i, branch in enumerate(w):
                out += self.check(r, branch, f"{path}/{i}" if rk == "union" else path)
            return out
        if rk == wk or {rk, wk} <= {"record", "error"}:
            return self.same_kind(r, w, rk, path)
        if rk == "union":
            for branch in r:
                if not self.check(branch, w, path):
                    return []
            return [self.problem(
                "MISSING_UNION_BRANCH", path,
                f"The {self.rname} schema is missing a type inside a union field at path "
                f"'{path}' in the {self.wname} schema", f"reader union lacking writer type: "
                f"{wk.upper() if wk in PRIMITIVES else _label(w)}")]
        if (rk, wk) in PROMOTIONS:
            return []
        return [self.problem(
            "TYPE_MISMATCH", path,
            f"The type (path '{path}') of a field in the {self.rname} schema does not match "
            f"with the {self.wname} schema", f"reader type: {_label(r)} not compatible with "
            f"writer type: {_label(w)}")]

    def same_kind(self, r, w, kind: str, path: str) -> list[str]:
        if kind in PRIMITIVES:
            return []
        if kind == "array":
            return self.check(r["items"], w["items"], f"{path}/items")
        if kind == "map":
            return self.check(r["values"], w["values"], f"{path}/values")
        if not self.names_match(r, w):
            return [self.problem(
                "NAME_MISMATCH", f"{path}/name",
                f"The name of the schema has changed (path '{path}/name')",
                f"expected: {w['name']}")]
        if kind == "fixed":
            if r.get("size") != w.get("size"):
                return [self.problem(
                    "FIXED_SIZE_MISMATCH", f"{path}/size",
                    f"The size of FIXED type field at path '{path}/size' in the {self.rname} "
                    f"schema does not match with the {self.wname} schema",
                    f"expected: {w.get('size')}, found: {r.get('size')}")]
            return []
        if kind == "enum":
            symbols = r.get("symbols") or []
            missing = [s for s in (w.get("symbols") or []) if s not in symbols]
            if missing and r.get("default") not in symbols:
                return [self.problem(
                    "MISSING_ENUM_SYMBOLS", f"{path}/symbols",
                    f"The {self.rname} schema is missing enum symbols '{missing}' at path "
                    f"'{path}/symbols' in the {self.wname} schema", str(missing))]
            return []
        return self.record(r, w, path)

    def record(self, r: dict, w: dict, path: str) -> list[str]:
        pair = (r["name"], w["name"])
        if pair in self.in_progress:
            return []  # recursive type: assume compatible, as Avro does
        self.in_progress.add(pair)
        try:
            out = []
            writer_fields = {f["name"]: f for f in w["fields"]}
            for i, rf in enumerate(r["fields"]):
                wf = writer_fields.get(rf["name"])
                if wf is None:
                    wf = next((writer_fields[a] for a in rf.get("aliases", ())
                               if a in writer_fields), None)
                if wf is None:
                    if "default" not in rf:
                        out.append(self.problem(
                            "READER_FIELD_MISSING_DEFAULT_VALUE", f"{path}/fields/{i}",
                            f"The field '{rf['name']}' at path '{path}/fields/{i}' in the "
                            f"{self.rname} schema has no default value and is missing in the "
                            f"{self.wname} schema", rf["name"]))
                    continue
                out += self.check(rf["type"], wf["type"], f"{path}/fields/{i}/type")
            return out
        finally:
            self.in_progress.discard(pair)


def _label(node) -> str:
    if isinstance(node, list):
        return "UNION"
    if isinstance(node, dict):
        return node["type"].upper()
    return str(node).upper()


def incompatibilities(reader: AvroSchema, writer: AvroSchema,
                      names: tuple[str, str] = ("reader", "writer")) -> list[str]:
    """Why data written with `writer` cannot be read with `reader`; empty when it can."""
    return _Checker(reader, writer, names).check(reader.root, writer.root, "")


def can_read(reader: AvroSchema, writer: AvroSchema) -> bool:
    return not incompatibilities(reader, writer)


def check(level: str, new: AvroSchema, previous: Sequence[AvroSchema]) -> list[str]:
    """Problems of `new` under `level` against `previous` (oldest first); empty: compatible."""
    level = level.upper()
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    out: list[str] = []
    for old in reversed(against):  # newest first, like Confluent's messages
        if level.startswith(("BACKWARD", "FULL")):
            out += incompatibilities(new, old, ("new", "old"))
        if level.startswith(("FORWARD", "FULL")):
            out += incompatibilities(old, new, ("old", "new"))
    return out
