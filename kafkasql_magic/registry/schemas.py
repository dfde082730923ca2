"""The schema types the embedded registry stores.

- AVRO (the default): validated with fastavro (defaults included), normalised for identity
  (`compat.AvroSchema.canonical`) and checked for compatibility.
- JSON: must be a JSON Schema (an object or a boolean); checked against its meta-schema when
  `jsonschema` is installed; identity is the JSON with sorted keys. No compatibility rules.
- PROTOBUF: stored and served as text; identity ignores whitespace. No compatibility rules.

A schema of another type than the versions it is compared with is incompatible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

from kafkasql_magic.registry import compat

TYPES = ("JSON", "PROTOBUF", "AVRO")  # what GET /schemas/types answers, in Confluent's order


class InvalidSchema(ValueError):
    """Schema text that its type rejects (the registry answers 42201)."""


@dataclass(frozen=True)
class Parsed:
    schema_type: str
    text: str  # what the registry stores and serves
    canonical: str  # equal canonical texts (of one type) are the same schema
    avro: compat.AvroSchema | None = None


def _compact(raw) -> str:
    return json.dumps(raw, separators=(",", ":"))


def _json_text(text: str, what: str):
    if not isinstance(text, str) or not text.strip():
        raise InvalidSchema("Empty schema")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidSchema(f"Invalid {what} schema: {exc}") from exc


def parse(schema_type: str, text: str, references: Sequence[tuple[str, str]] = (), *,
          validate: bool = True, normalize: bool = False) -> Parsed:
    """Parse `text` of `schema_type`; `references` are the (type, text) of the schemas it
    refers to, dependencies first. `validate=False` is for records replayed from the log."""
    schema_type = (schema_type or "AVRO").upper()
    if schema_type == "AVRO":
        return _parse_avro(text, references, validate, normalize)
    if schema_type == "JSON":
        raw = _json_text(text, "JSON")
        if not isinstance(raw, (dict, bool)):
            raise InvalidSchema("Invalid JSON schema: a JSON Schema is an object or a boolean")
        if validate:
            _check_json_schema(raw)
        canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"))
        return Parsed("JSON", canonical if normalize else _compact(raw), canonical)
    if schema_type == "PROTOBUF":
        if not isinstance(text, str) or not text.strip():
            raise InvalidSchema("Empty schema")
        return Parsed("PROTOBUF", text, " ".join(text.split()))
    raise InvalidSchema(f"Invalid schema type {schema_type}; supported types: {', '.join(TYPES)}")


def _parse_avro(text, references, validate: bool, normalize: bool) -> Parsed:
    raw = _json_text(text, "Avro")
    ref_raw = [json.loads(t) for kind, t in references if (kind or "AVRO").upper() == "AVRO"]
    if validate:
        import fastavro

        named: dict = {}
        try:
            for ref in ref_raw:
                fastavro.parse_schema(ref, named_schemas=named)
            fastavro.parse_schema(raw, named_schemas=named)
        except Exception as exc:  # SchemaParseException, UnknownType, and malformed input
            raise InvalidSchema(f"Invalid Avro schema: {exc}") from exc
    try:
        avro = compat.AvroSchema(raw, ref_raw)
    except compat.AvroSchemaError as exc:
        raise InvalidSchema(f"Invalid Avro schema: {exc}") from exc
    return Parsed("AVRO", avro.canonical if normalize else _compact(raw), avro.canonical, avro)


def _check_json_schema(raw) -> None:
    try:
        from jsonschema import exceptions, validators
    except ImportError:  # optional: without it any JSON object passes
        return
    try:
        validators.validator_for(raw, default=validators.Draft7Validator).check_schema(raw)
    except exceptions.SchemaError as exc:
        raise InvalidSchema(f"Invalid JSON schema: {exc.message}") from exc


def compatibility(level: str, new: Parsed, previous: Sequence[Parsed]) -> list[str]:
    """Problems of `new` under `level` against `previous` (oldest first); empty: compatible."""
    level = level.upper()
    if level == "NONE" or not previous:
        return []
    against = list(previous) if level.endswith("_TRANSITIVE") else list(previous[-1:])
    kinds = {p.schema_type for p in against}
    if kinds != {new.schema_type}:
        return [f"{{errorType:'SCHEMA_TYPE_MISMATCH', description:'Incompatible because of "
                f"different schema type', additionalInfo:'{new.schema_type} vs "
                f"{', '.join(sorted(kinds))}'}}"]
    if new.schema_type != "AVRO":
        return []
    try:
        if new.avro is None or any(p.avro is None for p in against):
            raise compat.AvroSchemaError("a schema could not be parsed")
        return compat.check(level, new.avro, [p.avro for p in against])
    except compat.AvroSchemaError as exc:  # e.g. a stored schema whose reference is gone
        return [f"{{errorType:'UNREADABLE_SCHEMA', description:'Cannot compare the schemas: "
                f"{exc}', additionalInfo:''}}"]
