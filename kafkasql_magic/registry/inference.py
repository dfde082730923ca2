"""Schema inference from Schema Registry: ksqlDB's CREATE without columns, and the statement it implies.

Rules (ksqlDB's, see `DefaultSchemaInjector`, `SchemaRegistryTopicSchemaSupplier`,
`ConnectFormatSchemaTranslator` and `ConnectKsqlSchemaTranslator` in confluentinc/ksql, and
docs.ksqldb.io "Schema Registry integration" / "Schema Inference With ID"):

- Subjects follow TopicNameStrategy (`<topic>-key`, `<topic>-value`); the latest version is used
  unless KEY_SCHEMA_ID / VALUE_SCHEMA_ID pin an id.
- Only AVRO, JSON_SR and PROTOBUF are inferable; KAFKA, JSON,
  DELIMITED and NONE contribute no columns (partial inference: declare those yourself).
- Value: a record / object schema gives one column per field, names upper-cased (ksqlDB's
  default UPPERCASE_FIELD_NAME policy, nested STRUCT fields too). Any other schema is an
  anonymous value: one column ROWVAL, read with WRAP_SINGLE_VALUE=false (ksqlDB refuses it
  otherwise; we infer it and say so in the statement).
- Key: always unwrapped (ksqlDB wraps the key schema into one column): ROWKEY of the key
  schema's type, so a record key is ONE column `ROWKEY STRUCT<...>`.
- Types: see `formats/avro_types.py` (Avro), `registry/json_schema_types.py` (JSON Schema) and
  `formats/protobuf_types.py` (Protobuf: the first message of the schema's file).
  A type without a ksql equivalent is an error naming the field (ksqlDB drops such fields
  with a log line; an error is clearer in a notebook).

Registry calls use a short timeout and no retries: a down registry is an error naming its URL
at once, never a hang.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field

from .. import types
from ..errors import StatementError
from ..formats import avro_types
from ..sql import ast
from . import json_schema_types
from .guess import Guess, guess  # noqa: F401 - re-exported: `inference.guess(records)`

#: ksql format -> the registry's schema type it reads.
SCHEMA_TYPES = {"AVRO": "AVRO", "JSON_SR": "JSON", "PROTOBUF": "PROTOBUF"}
#: registry schema type -> ksql format.
FORMATS = {v: k for k, v in SCHEMA_TYPES.items()}
NOT_INFERABLE = frozenset({"KAFKA", "JSON", "DELIMITED", "NONE", "PROTOBUF_NOSR"})
ROWKEY, ROWVAL = "ROWKEY", "ROWVAL"
CLIENT_CONF = {"timeout": 5, "max.retries": 0, "cache.latest.ttl.sec": 1}


@dataclass(frozen=True)
class RegisteredVersion:
    """One schema of a subject, as the registry holds it."""

    subject: str | None
    schema_id: int
    version: int | None
    schema_type: str
    text: str
    references: tuple[str, ...] = ()
    #: the import names of `references` (Protobuf compiles them under these names)
    reference_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Inferred:
    """Columns inferred for a topic, and where they came from (None: that part not inferred)."""

    topic: str
    key_format: str
    value_format: str
    key_columns: list = field(default_factory=list)
    value_columns: list = field(default_factory=list)
    value_wrapped: bool = True  # False: one ROWVAL column, WRAP_SINGLE_VALUE=false
    key_subject: str | None = None
    key_schema_id: int | None = None
    key_version: int | None = None
    key_schema: str | None = None
    key_schema_type: str | None = None
    value_subject: str | None = None
    value_schema_id: int | None = None
    value_version: int | None = None
    value_schema: str | None = None
    value_schema_type: str | None = None
    key_pinned: bool = False  # the id came from KEY_SCHEMA_ID, so the statement names it
    value_pinned: bool = False

    is_guess = False

    @property
    def key_inferred(self) -> bool:
        return self.key_schema_id is not None

    @property
    def value_inferred(self) -> bool:
        return self.value_schema_id is not None

    @property
    def key_pinned_id(self) -> int | None:
        return self.key_schema_id if self.key_pinned else None

    @property
    def value_pinned_id(self) -> int | None:
        return self.value_schema_id if self.value_pinned else None


# ---------------------------------------------------------------- registry access
_lock = threading.Lock()
_clients: dict[str, object] = {}


def registry_client(url: str):
    """A SchemaRegistryClient with a short timeout, no retries and a 1 s latest-version cache
    (the shared one in `formats.schema_registry` caches latest versions for good)."""
    from ..clientconf import registry_client_conf
    from ..formats.schema_registry import OUTAGE_TIMEOUT

    settings = registry_client_conf(url, CLIENT_CONF)  # auth from the URL or the client properties
    settings.pop(OUTAGE_TIMEOUT, None)
    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    with _lock:
        c = _clients.get(key)
        if c is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            c = _clients[key] = SchemaRegistryClient(settings)
        return c


def subject(topic: str, role: str) -> str:
    """TopicNameStrategy."""
    return f"{topic}-{role}"


def _status(exc: Exception) -> int | None:
    return getattr(exc, "http_status_code", None)


def unreachable(url: str, exc: Exception) -> StatementError:
    return StatementError(f"Schema registry at {url} is not reachable: {exc}")


def _not_found(url: str, topic: str, role: str) -> StatementError:
    return StatementError(
        f"Schema for message {role}s on topic '{topic}' does not exist in the Schema Registry at {url}. "
        f"Subject: {subject(topic, role)}")


def _fail(url: str, exc: Exception, missing: StatementError) -> StatementError:
    code = _status(exc)
    if code == 404:
        return missing
    if code is not None:
        return StatementError(f"Schema registry at {url} refused the request (HTTP {code}): {exc}")
    if isinstance(exc, OSError) or type(exc).__module__.split(".")[0].startswith("httpx"):
        return unreachable(url, exc)  # connection refused, timeouts, DNS
    return StatementError(f"Schema registry request to {url} failed: {type(exc).__name__}: {exc}")


def _references(c, refs, seen=None) -> list[tuple[str, str]]:
    """(name, text) of every reference, transitively, dependencies first."""
    seen = set() if seen is None else seen
    out: list[tuple[str, str]] = []
    for ref in refs or []:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        registered = c.get_version(ref.subject, ref.version).schema
        out += _references(c, registered.references, seen)
        out.append((ref.name, registered.schema_str))
    return out


def _texts(refs) -> tuple[str, ...]:
    return tuple(text for _, text in refs)


def _names(refs) -> tuple[str, ...]:
    return tuple(name for name, _ in refs)


def subjects(url: str) -> list[str]:
    """Every subject of the registry, sorted; StatementError naming the URL when it is down."""
    try:
        return sorted(registry_client(url).get_subjects())
    except Exception as exc:  # noqa: BLE001 - any failure is "the registry cannot tell"
        raise _fail(url, exc, StatementError(f"Schema registry at {url} has no subjects endpoint")) from None


def fetch_latest(url: str, topic: str, role: str) -> RegisteredVersion:
    """The latest schema of `<topic>-<role>`; StatementError naming subject and URL."""
    name = subject(topic, role)
    c = registry_client(url)
    try:
        r = c.get_latest_version(name)
        refs = _references(c, r.schema.references)
    except Exception as exc:  # noqa: BLE001
        raise _fail(url, exc, _not_found(url, topic, role)) from None
    return RegisteredVersion(name, r.schema_id, r.version, r.schema.schema_type or "AVRO",
                             r.schema.schema_str, _texts(refs), _names(refs))


def fetch_by_id(url: str, topic: str, role: str, schema_id: int) -> RegisteredVersion:
    """Schema `schema_id`, with its version under `<topic>-<role>` when registered there."""
    c = registry_client(url)
    missing = StatementError(f"Schema id {schema_id} not found in the Schema Registry at {url}")
    try:
        s = c.get_schema(int(schema_id))
        refs = _references(c, s.references)
        versions = c.get_schema_versions(int(schema_id))
    except Exception as exc:  # noqa: BLE001
        raise _fail(url, exc, missing) from None
    name = subject(topic, role)
    mine = [v for v in versions if v.subject == name]
    where = mine[0] if mine else (versions[0] if versions else None)
    return RegisteredVersion(where.subject if where else None, int(schema_id), where.version if where else None,
                             s.schema_type or "AVRO", s.schema_str, _texts(refs), _names(refs))


def latest_schema_of(url: str, topic: str, role: str):
    """The parsed (expanded) Avro schema latest registered under `<topic>-<role>`."""
    reg = fetch_latest(url, topic, role)
    if reg.schema_type != "AVRO":
        raise StatementError(
            f"Subject {reg.subject} in the Schema Registry at {url} holds a {reg.schema_type} schema, not AVRO")
    try:
        return avro_types.parse_writer(reg.text, reg.references)[1]
    except Exception as exc:  # noqa: BLE001 - a schema fastavro cannot parse
        raise StatementError(f"Subject {reg.subject} holds an Avro schema that cannot be parsed: {exc}") from None


# ---------------------------------------------------------------- schemas -> columns (pure)
def upper_fields(t: ast.Type) -> ast.Type:
    """`t` with every STRUCT field name upper-cased (ksqlDB's UPPERCASE_FIELD_NAME policy)."""
    if t.name == "STRUCT":
        seen: dict[str, str] = {}
        fields = []
        for n, ft in t.fields:
            if n.upper() in seen:
                raise ValueError(f"fields `{seen[n.upper()]}` and `{n}` have the same ksql name {n.upper()}")
            seen[n.upper()] = n
            fields.append((n.upper(), upper_fields(ft)))
        return ast.Type("STRUCT", fields=tuple(fields))
    if t.name == "ARRAY":
        return ast.Type("ARRAY", element=upper_fields(t.element))
    if t.name == "MAP":
        return ast.Type("MAP", key=t.key, value=upper_fields(t.value))
    return t


def schema_type_of(schema_type: str, text: str, references: tuple[str, ...] = (),
                   reference_names: tuple[str, ...] = ()) -> ast.Type:
    """The ksql type of a registered schema (record / object / message -> STRUCT, names upper-cased)."""
    if schema_type == "AVRO":
        expanded = avro_types.parse_writer(text, references)[1]
        return upper_fields(avro_types.to_ksql(expanded))
    if schema_type == "JSON":
        return json_schema_types.to_ksql(json.loads(text))
    if schema_type == "PROTOBUF":
        from ..formats import protobuf_schema, protobuf_types

        schema = protobuf_schema.Schema(text, tuple(zip(reference_names, references)))
        return upper_fields(protobuf_types.to_ksql(schema.message([0])))
    raise StatementError(f"{schema_type} schema inference is not supported yet: declare the columns "
                         "in the statement")


def columns_of(schema_type: str, text: str, role: str, references: tuple[str, ...] = (),
               reference_names: tuple[str, ...] = ()) -> tuple[list[tuple[str, ast.Type]], bool]:
    """(columns, wrapped) of a registered schema: key -> [ROWKEY <type>]; record value -> its
    fields (wrapped); any other value -> [ROWVAL <type>] (not wrapped). A Protobuf key is a
    message: one field is that field's type (ksqlDB unwraps single-field keys), more a STRUCT."""
    t = schema_type_of(schema_type, text, references, reference_names)
    if role == "key" and schema_type == "PROTOBUF" and len(t.fields) == 1:
        return [(ROWKEY, t.fields[0][1])], False
    if role == "key":
        return [(ROWKEY, t)], False
    if t.name == "STRUCT":
        return list(t.fields), True
    return [(ROWVAL, t)], False


def _columns(reg: RegisteredVersion, role: str, fmt: str, topic: str):
    expected = SCHEMA_TYPES[fmt]
    if reg.schema_type != expected:
        prop = "KEY_FORMAT" if role == "key" else "VALUE_FORMAT"
        actual = FORMATS.get(reg.schema_type, reg.schema_type)
        raise StatementError(
            f"{role.capitalize()} schema is not in the expected format. You may want to set {prop} to "
            f"'{actual}'.\ntopic: {topic}\nsubject: {reg.subject}\nexpected format: {fmt}\n"
            f"actual format: {actual}")
    try:
        return columns_of(reg.schema_type, reg.text, role, reg.references, reg.reference_names)
    except StatementError:
        raise
    except Exception as exc:  # noqa: BLE001 - AvroTypeError, JsonSchemaTypeError, parse errors
        raise StatementError(
            f"Cannot infer the {role} columns of topic '{topic}' from subject {reg.subject} "
            f"(schema id {reg.schema_id}): {exc}") from None


def infer_from(topic: str, *, key_format: str, value_format: str,
               key: RegisteredVersion | None = None, value: RegisteredVersion | None = None,
               key_pinned: bool = False, value_pinned: bool = False) -> Inferred:
    """Pure: the `Inferred` of already fetched registered schemas (None: that part not inferred)."""
    out: dict = {}
    for role, fmt, reg in (("key", key_format, key), ("value", value_format, value)):
        if reg is None:
            continue
        columns, wrapped = _columns(reg, role, fmt, topic)
        out.update({f"{role}_columns": columns, f"{role}_subject": reg.subject,
                    f"{role}_schema_id": reg.schema_id, f"{role}_version": reg.version,
                    f"{role}_schema": reg.text, f"{role}_schema_type": reg.schema_type})
        if role == "value":
            out["value_wrapped"] = wrapped
    return Inferred(topic=topic, key_format=key_format, value_format=value_format,
                    key_pinned=key_pinned and key is not None,
                    value_pinned=value_pinned and value is not None, **out)


def check_format(fmt: str, role: str) -> str:
    fmt = (fmt or "").upper()
    if fmt not in SCHEMA_TYPES and fmt not in NOT_INFERABLE:
        raise StatementError(f"Unknown {role} format '{fmt}'")
    return fmt


def infer(url: str, topic: str, *, key_format: str, value_format: str,
          key_schema_id: int | None = None, value_schema_id: int | None = None) -> Inferred:
    """Key and value columns of `topic` from the registry at `url`, as ksqlDB infers them."""
    key_format, value_format = check_format(key_format, "key"), check_format(value_format, "value")
    fetched: dict[str, RegisteredVersion | None] = {"key": None, "value": None}
    for role, fmt, pinned in (("key", key_format, key_schema_id), ("value", value_format, value_schema_id)):
        if fmt in NOT_INFERABLE:
            continue
        if not url:
            raise StatementError(f"{fmt} format requires a schema registry URL to infer the {role} columns")
        fetched[role] = (fetch_by_id(url, topic, role, pinned) if pinned is not None
                         else fetch_latest(url, topic, role))
    return infer_from(topic, key_format=key_format, value_format=value_format, key=fetched["key"],
                      value=fetched["value"], key_pinned=key_schema_id is not None,
                      value_pinned=value_schema_id is not None)


# ---------------------------------------------------------------- CREATE statements
_PLAIN = re.compile(r"[A-Z_][A-Z0-9_]*")


def ident(name: str) -> str:
    """`name` as a ksql identifier: bare when it reads back the same, else in backticks."""
    from ..sql import reserved_words

    if _PLAIN.fullmatch(name) and name not in reserved_words():
        return name
    return "`" + name.replace("`", "``") + "`"


def _quote(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def source_name(topic: str) -> str:
    """A stream/table name for `topic`: upper case, other characters as `_`."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", topic).upper()
    return name if _PLAIN.fullmatch(name) else f"T_{name}"


def create_statement(name: str, topic: str, inferred_or_guess, *, kind: str = "STREAM",
                     key_format: str, value_format: str, explicit: bool = False) -> str:
    """The CREATE STREAM/TABLE statement `inferred_or_guess` implies.

    ksqlDB style (default): the columns of a part inferred from the registry are left out (ksqlDB
    fetches them); `explicit=True` lists every column. A part that is not inferred (KAFKA, JSON,
    DELIMITED keys or values; a `Guess`) always lists its columns. A TABLE without a known key
    gets `ROWKEY STRING PRIMARY KEY` (tables need one).
    """
    kind = kind.upper()
    key_format, value_format = key_format.upper(), value_format.upper()
    src = inferred_or_guess
    role = "PRIMARY KEY" if kind == "TABLE" else "KEY"
    key_cols = list(src.key_columns)
    if kind == "TABLE" and key_format == "NONE":
        raise StatementError("Tables require a key format other than 'NONE'.")
    omit_key = src.key_inferred and not explicit
    if kind == "TABLE" and not key_cols and not omit_key:
        key_cols = [(ROWKEY, types.STRING)]
    lines = [] if omit_key else [f"{ident(n)} {types.display(t)} {role}" for n, t in key_cols]
    list_values = explicit or not src.value_inferred
    if list_values:
        lines += [f"{ident(n)} {types.display(t)}" for n, t in src.value_columns]
    props = [f"KAFKA_TOPIC={_quote(topic)}", f"KEY_FORMAT={_quote(key_format)}",
             f"VALUE_FORMAT={_quote(value_format)}"]
    if not src.value_wrapped and value_format in ("JSON", "JSON_SR", "AVRO", "PROTOBUF"):
        props.append("WRAP_SINGLE_VALUE=false")
    # a schema id pins only what the statement leaves to inference (ksqlDB refuses columns beside it)
    if src.key_pinned_id is not None and omit_key:
        props.append(f"KEY_SCHEMA_ID={src.key_pinned_id}")
    if src.value_pinned_id is not None and not list_values:
        props.append(f"VALUE_SCHEMA_ID={src.value_pinned_id}")
    head = f"CREATE {kind} {ident(name)}"
    body = (" (\n" + ",\n".join("  " + line for line in lines) + "\n)") if lines else ""
    return f"{head}{body} WITH ({', '.join(props)});"
