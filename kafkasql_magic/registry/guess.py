"""Guess key and value formats and columns from a few sampled records (no registered schema).

`guess(records)` takes records as `kafkasql_magic.kafka.peek.fetch_records` returns them
(dicts with `key` and `value` bytes, str or None) and says, as a guess, which format each side
looks like and which columns it would have:

- Confluent framing (magic byte 0, a schema id >= 1, few distinct ids): AVRO, or JSON_SR when
  the payload after the header is JSON text; the schema ids are reported so the registry can
  be asked for them (an 8-byte payload with several ids is a BIGINT instead: big-endian
  timestamps look framed).
- UTF-8 text: JSON objects -> JSON with their members merged over the records (names upper-
  cased; integers BIGINT, other numbers DOUBLE, mixed types STRING); JSON arrays and quoted
  strings -> JSON with one anonymous column; values split by `,` into the same number (> 1) of
  parts -> DELIMITED (COLUMN1..N); other text -> KAFKA STRING.
- Other bytes: 4 bytes -> KAFKA INT, 8 bytes -> KAFKA BIGINT (or DOUBLE), else KAFKA BYTES.
- No non-null key -> KEY_FORMAT NONE (a stream without a key column).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .. import types
from ..sql import ast

MAX_FRAMED_IDS = 3
DOUBLE = ast.Type("DOUBLE")
BOOLEAN = ast.Type("BOOLEAN")


@dataclass(frozen=True)
class Guess:
    """What sampled records suggest. Formats are None when no record was sampled."""

    sampled: int
    key_format: str | None
    key_columns: list = field(default_factory=list)
    value_format: str | None = None
    value_columns: list = field(default_factory=list)
    value_wrapped: bool = True  # False: one anonymous value column (WRAP_SINGLE_VALUE=false)
    key_schema_ids: tuple[int, ...] = ()
    value_schema_ids: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()

    is_guess = True
    key_inferred = False  # no part comes from a registered schema
    value_inferred = False
    key_pinned_id = None
    value_pinned_id = None

    def summary(self) -> str:
        if not self.sampled:
            return "Guess: the topic has no records to sample."
        return (f"Guess from {self.sampled} sampled record(s), not from a registered schema: "
                f"key looks like {self.key_format}, value looks like {self.value_format}.")


# ---------------------------------------------------------------- JSON values -> ksql types
class _Merge:
    def __init__(self):
        self.notes: list[str] = []

    def of(self, v):
        """ksql type of a JSON value; None for null (unknown yet)."""
        if v is None:
            return None
        if isinstance(v, bool):
            return BOOLEAN
        if isinstance(v, int):
            return types.BIGINT
        if isinstance(v, float):
            return DOUBLE
        if isinstance(v, str):
            return types.STRING
        if isinstance(v, list):
            element = None
            for item in v:
                element = self.merge(element, self.of(item), "[]")
            return ast.Type("ARRAY", element=element)
        fields: dict[str, tuple[str, object]] = {}
        for name, item in v.items():
            upper = str(name).upper()
            prev = fields.get(upper, (upper, None))[1]
            fields[upper] = (upper, self.merge(prev, self.of(item), upper))
        return ast.Type("STRUCT", fields=tuple(fields.values()))

    def merge(self, a, b, path: str):
        if a is None:
            return b
        if b is None or a == b:
            return a
        if {a.name, b.name} == {"BIGINT", "DOUBLE"}:
            return DOUBLE
        if a.name == b.name == "ARRAY":
            return ast.Type("ARRAY", element=self.merge(a.element, b.element, path + "[]"))
        if a.name == b.name == "STRUCT":
            fields = {n: t for n, t in a.fields}
            for n, t in b.fields:
                fields[n] = self.merge(fields.get(n), t, f"{path}.{n}" if path else n)
            return ast.Type("STRUCT", fields=tuple(fields.items()))
        self.notes.append(f"`{path or 'value'}` holds both {types.display(a)} and {types.display(b)}: "
                          "typed STRING")
        return types.STRING

    def final(self, t, path: str):
        """Unknown (always null) parts become STRING; empty objects MAP<STRING, STRING>."""
        if t is None:
            self.notes.append(f"`{path}` was null in every sampled record: typed STRING")
            return types.STRING
        if t.name == "ARRAY":
            if t.element is None:
                self.notes.append(f"`{path}` was an empty array in every sampled record: typed ARRAY<STRING>")
                return ast.Type("ARRAY", element=types.STRING)
            return ast.Type("ARRAY", element=self.final(t.element, path + "[]"))
        if t.name == "STRUCT":
            if not t.fields:
                self.notes.append(f"`{path}` was an empty object in every sampled record: typed MAP<STRING, STRING>")
                return ast.Type("MAP", key=types.STRING, value=types.STRING)
            return ast.Type("STRUCT", fields=tuple(
                (n, self.final(ft, f"{path}.{n}" if path else n)) for n, ft in t.fields))
        return t


# ---------------------------------------------------------------- one side (key or value)
@dataclass
class _Side:
    fmt: str | None
    columns: list
    wrapped: bool = True
    ids: tuple[int, ...] = ()
    notes: list = field(default_factory=list)


def _bytes(p) -> bytes:
    return p.encode() if isinstance(p, str) else bytes(p)


def _text(p: bytes) -> str | None:
    try:
        s = p.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return s if all(c.isprintable() or c in "\t\r\n" for c in s) else None


def _json(s: str):
    try:
        return True, json.loads(s)
    except ValueError:
        return False, None


def _framed_ids(payloads: list[bytes]) -> tuple[int, ...] | None:
    if not all(len(p) >= 5 and p[0] == 0 for p in payloads):
        return None
    ids = sorted({int.from_bytes(p[1:5], "big") for p in payloads})
    if ids[0] < 1 or len(ids) > MAX_FRAMED_IDS:
        return None
    if len(ids) > 1 and all(len(p) == 8 for p in payloads):
        return None  # big-endian 8-byte numbers (e.g. timestamps) look framed
    return tuple(ids)


def _scalar_type(parts: list[str]) -> ast.Type:
    def fits(conv):
        try:
            for s in parts:
                if s.strip():
                    conv(s.strip())
            return True
        except ValueError:
            return False
    if any(s.strip() for s in parts) and fits(int):
        return types.BIGINT
    if any(s.strip() for s in parts) and fits(float):
        return DOUBLE
    return types.STRING


def _side(payloads, role: str, anonymous: str) -> _Side:
    present = [_bytes(p) for p in payloads if p is not None]
    if not present:
        if role == "key":
            return _Side("NONE", [], notes=["every sampled key is null: a stream without a key column"])
        return _Side(None, [], notes=["every sampled value is null (tombstones)"])
    ids = _framed_ids(present)
    if ids is not None:
        docs = [_json(t) for t in (_text(p[5:]) for p in present) if t is not None]
        id_text = ", ".join(map(str, ids))
        if len(docs) == len(present) and all(ok for ok, _ in docs):
            side = _json_side([d for _, d in docs], role, anonymous, "JSON_SR")
            side.ids = ids
            side.notes.append(f"Schema Registry framing with schema id(s) {id_text}: JSON_SR")
            return side
        return _Side("AVRO", [], ids=ids, notes=[
            f"Schema Registry framing with schema id(s) {id_text} and a binary payload: AVRO "
            "(or PROTOBUF); its columns come from the registered schema"])
    texts = [_text(p) for p in present]
    if all(t is not None for t in texts):
        docs = [_json(t) for t in texts]
        parsed = [d for ok, d in docs if ok]
        if len(parsed) == len(texts) and any(isinstance(d, (dict, list)) for d in parsed):
            return _json_side(parsed, role, anonymous, "JSON")
        if len(parsed) == len(texts) and all(isinstance(d, str) for d in parsed):
            return _Side("JSON", [(anonymous, types.STRING)], wrapped=False,
                         notes=["quoted JSON strings"])
        if role == "value":
            counts = {len(t.split(",")) for t in texts}
            if len(counts) == 1 and (n := counts.pop()) > 1:
                rows = [t.split(",") for t in texts]
                cols = [(f"COLUMN{i + 1}", _scalar_type([r[i] for r in rows])) for i in range(n)]
                return _Side("DELIMITED", cols, notes=[
                    f"comma-separated text with {n} fields: name the columns COLUMN1..{n} as you like"])
        note = ["numeric text: KAFKA STRING (JSON would read it as a number)"] if all(ok for ok, _ in docs) else []
        return _Side("KAFKA", [(anonymous, types.STRING)], wrapped=False, notes=note)
    sizes = {len(p) for p in present}
    if sizes == {4}:
        return _Side("KAFKA", [(anonymous, types.INT)], wrapped=False, notes=["4-byte binary: KAFKA INT"])
    if sizes == {8}:
        return _Side("KAFKA", [(anonymous, types.BIGINT)], wrapped=False,
                     notes=["8-byte binary: KAFKA BIGINT (or DOUBLE)"])
    return _Side("KAFKA", [(anonymous, types.BYTES)], wrapped=False, notes=["binary data: KAFKA BYTES"])


def _json_side(docs: list, role: str, anonymous: str, fmt: str) -> _Side:
    m = _Merge()
    objects = [d for d in docs if isinstance(d, dict)]
    if objects and role == "value":
        merged = None
        for d in objects:
            merged = m.merge(merged, m.of(d), "")
        final = m.final(merged, "")
        columns = list(final.fields) if final.name == "STRUCT" else []
        notes = m.notes
        if len(objects) < len(docs):
            notes.append(f"{len(docs) - len(objects)} sampled value(s) are not JSON objects")
        return _Side(fmt, columns, notes=notes)
    merged = None
    for d in docs:
        merged = m.merge(merged, m.of(d), anonymous)
    return _Side(fmt, [(anonymous, m.final(merged, anonymous))], wrapped=False, notes=m.notes)


def guess(records) -> Guess:
    """A `Guess` from sampled records (dicts with `key` and `value`)."""
    records = list(records)
    if not records:
        return Guess(0, None, notes=("the topic has no records to sample",))
    key = _side([r.get("key") for r in records], "key", "ROWKEY")
    value = _side([r.get("value") for r in records], "value", "ROWVAL")
    notes = [f"key: {n}" for n in key.notes] + [f"value: {n}" for n in value.notes]
    return Guess(
        sampled=len(records), key_format=key.fmt, key_columns=key.columns,
        value_format=value.fmt, value_columns=value.columns, value_wrapped=value.wrapped,
        key_schema_ids=key.ids, value_schema_ids=value.ids, notes=tuple(notes))
