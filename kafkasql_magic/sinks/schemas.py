"""A sink's AVRO / JSON_SR / PROTOBUF schemas: built with ksqlDB's naming and registered on the driver.

Registration happens before the query starts, so a schema the registry refuses (incompatible
with the subject's history) stops the statement with the registry's reason and no record is
written. `KEY_SCHEMA_ID` / `VALUE_SCHEMA_ID` name an existing schema to write with instead.
"""

from __future__ import annotations

import json
from typing import Sequence

from ..errors import StatementError
from ..formats import Field, FormatSpec
from ..formats import schema_registry as sr
from ..formats.avro_types import write_schema
from ..formats.json_sr import json_schema, optional
from ..formats.protobuf_types import proto_text
from ..sql import ast
from .encode import Registered, anonymous

#: ksqlDB's record names for the schemas of a sink's key and value.
RECORD_NAMES = {"key": "KsqlDataSourceKeySchema", "value": "KsqlDataSourceSchema"}
#: Format name -> the registry's schema type.
REGISTRY_TYPES = {"AVRO": "AVRO", "JSON_SR": "JSON", "PROTOBUF": "PROTOBUF"}
SCHEMA_ID_OPTIONS = {"key": "KEY_SCHEMA_ID", "value": "VALUE_SCHEMA_ID"}


def schema_text(format_name: str, fields: Sequence[Field], spec: FormatSpec, role: str) -> str:
    """The schema ksqlDB would register for these columns (PROTOBUF: always a message of them)."""
    if format_name == "PROTOBUF":
        return proto_text([(f.name, f.type) for f in fields])
    bare = anonymous(fields, spec, role)
    if format_name == "AVRO":
        return json.dumps(write_schema(fields, bare, RECORD_NAMES[role]))
    if bare:
        return json.dumps(optional(json_schema(fields[0].type)))
    struct = ast.Type("STRUCT", fields=tuple((f.name, f.type) for f in fields))
    return json.dumps({**json_schema(struct), "title": RECORD_NAMES[role]})


def register(url: str, topic: str, fields: Sequence[Field], spec: FormatSpec, role: str) -> Registered | None:
    """Register (or look up by id) the schema `role` is written with; None for other formats."""
    kind = REGISTRY_TYPES.get(spec.name.upper())
    if kind is None or not fields:
        return None
    if not url:
        raise StatementError(
            f"{spec.name.upper()} format requires a schema registry URL: "
            "connect(..., schema_registry_url=...) or %%kstream --registry URL")
    given = spec.options.get(SCHEMA_ID_OPTIONS[role])
    if given is not None:
        try:
            found = sr.client(url).get_schema(int(given))
        except Exception as exc:  # noqa: BLE001 - the registry's reason, as a user error
            raise StatementError(f"Cannot use {SCHEMA_ID_OPTIONS[role]} {given}: {_reason(exc)}") from None
        return Registered(int(given), found.schema_str)
    from confluent_kafka.schema_registry import Schema

    text = schema_text(spec.name.upper(), fields, spec, role)
    subject = sr.subject(topic, role)
    try:
        schema_id = sr.client(url).register_schema(subject, Schema(text, kind))
    except Exception as exc:  # noqa: BLE001 - incompatible schema, registry down: a user error
        raise StatementError(f"Could not register schema for subject {subject}: {_reason(exc)}") from None
    return Registered(int(getattr(schema_id, "schema_id", schema_id)), text)


def delete_subjects(url: str | None, topic: str) -> list[str]:
    """Delete `<topic>-key` and `<topic>-value` (DROP ... DELETE TOPIC); the deleted names."""
    if not url:
        return []
    deleted = []
    for role in ("key", "value"):
        subject = sr.subject(topic, role)
        try:
            sr.client(url).delete_subject(subject, permanent=False)
            sr.client(url).delete_subject(subject, permanent=True)
        except Exception:  # noqa: BLE001 - no such subject: nothing to delete
            continue
        deleted.append(subject)
    return deleted


def _reason(exc: Exception) -> str:
    message = getattr(exc, "error_message", None) or str(exc)
    code = getattr(exc, "error_code", None)
    return f"{message}; error code: {code}" if code not in (None, -1) else message
