"""Confluent Schema Registry framing and schema look-ups, shared by AVRO and JSON_SR.

Framing: magic byte 0, a 4-byte big-endian schema id, then the payload. Readers need only
the schema ids found in the data; each is fetched once per Python process (driver or
executor worker) and cached. The registry URL is `spec.options["SCHEMA_REGISTRY_URL"]`
(the session puts it there); writers also need `spec.options["KAFKA_TOPIC"]` for the
TopicNameStrategy subject `<topic>-key` / `<topic>-value`.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from .. import redact
from ..clientconf import Address
from ..errors import StatementError

MAGIC_BYTE = 0
HEADER_SIZE = 5
URL_OPTION = "SCHEMA_REGISTRY_URL"
TOPIC_OPTION = "KAFKA_TOPIC"
#: How long a failed look-up (unknown id, registry down) is remembered before trying again.
FAILURE_TTL_S = 5.0
#: Keep a dead registry from stalling a micro-batch: one quick try per look-up.
CLIENT_CONF = {"timeout": 10, "max.retries": 1, "retries.wait.ms": 200, "retries.max.wait.ms": 500}


class SchemaLookupError(Exception):
    """A schema id that could not be resolved; the message is ready for the processing log."""


def registry_url(spec, format_name: str) -> str:
    url = (spec.options or {}).get(URL_OPTION)
    if not url:
        raise StatementError(
            f"{format_name} format requires a schema registry URL: "
            "connect(..., schema_registry_url=...) or %%kstream --registry URL")
    if isinstance(url, Address):  # a connection's URL (with its client properties), stripped already
        return url
    return str(url).rstrip("/")


def topic_of(spec, format_name: str) -> str:
    topic = (spec.options or {}).get(TOPIC_OPTION)
    if not topic:
        raise StatementError(f"{format_name} format needs the topic name to find the subject to write with.")
    return str(topic)


def subject(topic: str, role: str) -> str:
    """TopicNameStrategy."""
    return f"{topic}-{role}"


def frame(schema_id: int, payload: bytes) -> bytes:
    return bytes([MAGIC_BYTE]) + int(schema_id).to_bytes(4, "big") + payload


def unframe(data: bytes) -> tuple[int, bytes]:
    """(schema id, payload); ValueError with Confluent's wording when the header is wrong."""
    if len(data) < HEADER_SIZE or data[0] != MAGIC_BYTE:
        raise ValueError(framing_problem(data))
    return int.from_bytes(data[1:5], "big"), data[HEADER_SIZE:]


def framing_problem(data: bytes) -> str:
    if len(data) == 0:
        return "Unknown magic byte! (empty record)"
    if data[0] != MAGIC_BYTE:
        return f"Unknown magic byte! (got 0x{data[0]:02x}, expected 0x00)"
    return f"Record too short for Schema Registry framing ({len(data)} bytes, expected at least 5)"


# ---------------------------------------------------------------- Spark-side framing
def framed(raw: Column) -> Column:
    """True when `raw` carries the 5-byte header with magic byte 0 (NULL for NULL records)."""
    return (F.length(raw) >= HEADER_SIZE) & (F.substring(raw, 1, 1) == F.lit(bytearray([MAGIC_BYTE])))


def payload(raw: Column) -> Column:
    """The bytes after the header; NULL when the record is not framed."""
    return F.when(framed(raw), F.substring(raw, HEADER_SIZE + 1, 2**31 - 1))


def framing_error(raw: Column) -> Column:
    """Why a non-NULL record is not framed, as Column text; NULL when it is."""
    first = F.lower(F.hex(F.substring(raw, 1, 1)))
    return F.when(raw.isNull() | framed(raw), F.lit(None).cast("string")).otherwise(
        F.when(F.length(raw) == 0, F.lit("Unknown magic byte! (empty record)"))
        .when(first != F.lit("00"), F.concat(F.lit("Unknown magic byte! (got 0x"), first, F.lit(", expected 0x00)")))
        .otherwise(F.concat(F.lit("Record too short for Schema Registry framing ("),
                            F.length(raw).cast("string"), F.lit(" bytes, expected at least 5)"))))


# ---------------------------------------------------------------- per-process schema cache
_lock = threading.Lock()
_clients: dict[tuple, object] = {}
_schemas: dict[tuple[str, int], "Registered"] = {}
_failures: dict[tuple[str, int], tuple[float, str]] = {}

#: Registry property (not the client's): how long a read waits for a registry that does not
#: answer before the query fails (a schema id the registry says it lacks is logged at once).
OUTAGE_TIMEOUT = "outage.timeout.ms"
DEFAULT_OUTAGE_TIMEOUT_S = 300.0
#: Back-off between tries while the registry does not answer: first, growth, cap (seconds).
BACKOFF = (0.5, 2.0, 10.0)


def client(url: str, conf: dict | None = None):
    """One SchemaRegistryClient per URL and settings per process. `conf` adds registry client
    properties (auth) to those configured in this process (`kafkasql_magic.clientconf`)."""
    from ..clientconf import registry_client_conf

    settings = registry_client_conf(url, CLIENT_CONF, {k: v for k, v in (conf or {}).items() if k != OUTAGE_TIMEOUT})
    settings.pop(OUTAGE_TIMEOUT, None)
    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    with _lock:
        c = _clients.get(key)
        if c is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            c = _clients[key] = SchemaRegistryClient(settings)
        return c


class RegistryUnavailable(Exception):
    """The registry did not answer within its outage timeout: the query stops rather than
    skip records it could decode once the registry is back."""


class Registered(NamedTuple):
    """A registered schema: its type (AVRO, JSON...), text, and the texts of its references
    (dependencies first)."""

    schema_type: str
    text: str
    references: tuple[str, ...] = ()


def is_transient(exc: Exception) -> bool:
    """True for a registry that does not answer (or answers 5xx / 401 / 403 / 429), where
    waiting may help; False for an answer about the schema itself (404, 422)."""
    code = getattr(exc, "http_status_code", None)
    return code is None or code >= 500 or code in (401, 403, 408, 429)


def outage_timeout(conf: dict | None) -> float:
    """Seconds a read waits for a registry that does not answer (`outage.timeout.ms`)."""
    raw = (conf or {}).get(OUTAGE_TIMEOUT)
    try:
        return float(raw) / 1000.0 if raw not in (None, "") else DEFAULT_OUTAGE_TIMEOUT_S
    except ValueError:
        return DEFAULT_OUTAGE_TIMEOUT_S


def schema_by_id(url: str, schema_id: int, conf: dict | None = None, *, sleep=time.sleep) -> Registered:
    """The schema registered under `schema_id`; SchemaLookupError when the registry says it has
    none. While the registry does not answer, tries again with back-off (the batch waits) and
    raises RegistryUnavailable once the outage lasts longer than `outage.timeout.ms`."""
    key = (url, schema_id)
    hit = _schemas.get(key)
    if hit is not None:
        return hit
    failed = _failures.get(key)
    if failed is not None and time.monotonic() - failed[0] < FAILURE_TTL_S:
        raise SchemaLookupError(failed[1])
    limit = outage_timeout(conf)
    started = time.monotonic()
    pause = BACKOFF[0]
    while True:
        try:
            c = client(url, conf)
            schema = c.get_schema(schema_id)
            refs = tuple(_references(c, schema.references or []))
            break
        except Exception as exc:  # noqa: BLE001 - sorted below: wait, log, or stop
            if not is_transient(exc):
                message = _lookup_message(url, schema_id, exc)
                _failures[key] = (time.monotonic(), message)
                raise SchemaLookupError(message) from None
            waited = time.monotonic() - started
            if waited >= limit:
                raise RegistryUnavailable(redact.text(
                    f"Schema registry at {url} did not answer for {waited:.0f}s (limit "
                    f"{OUTAGE_TIMEOUT}={limit * 1000:.0f}) while fetching schema id {schema_id}: "
                    f"{type(exc).__name__}: {exc}")) from None
            sleep(min(pause, max(0.0, limit - waited)))
            pause = min(pause * BACKOFF[1], BACKOFF[2])
    found = _schemas[key] = Registered(schema.schema_type or "AVRO", schema.schema_str, refs)
    _failures.pop(key, None)
    return found


def latest_schema(url: str, subject_name: str) -> Registered | None:
    """The subject's latest schema, or None when it has none (or the registry cannot tell)."""
    try:
        schema = client(url).get_latest_version(subject_name).schema
        refs = tuple(_references(client(url), schema.references or []))
    except Exception:  # noqa: BLE001 - no subject yet (404) or no answer: write with our own schema
        return None
    return Registered(schema.schema_type or "AVRO", schema.schema_str, refs)


def _references(c, refs, seen=None) -> list[str]:
    """Texts of referenced schemas, transitively, each after the ones it depends on."""
    seen = set() if seen is None else seen
    out: list[str] = []
    for ref in refs:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        registered = c.get_version(ref.subject, ref.version).schema
        out += _references(c, registered.references or [], seen)
        out.append(registered.schema_str)
    return out


def _lookup_message(url: str, schema_id: int, exc: Exception) -> str:
    code = getattr(exc, "http_status_code", None)
    if code == 404:
        return redact.text(f"Schema id {schema_id} not found in the schema registry at {url}")
    return redact.text(f"Cannot fetch schema id {schema_id} from the schema registry at {url}: {exc}")


# ---------------------------------------------------------------- writers
_serializers: dict[tuple, object] = {}


def serializer(kind: str, url: str, schema_text: str):
    """A cached confluent-kafka serializer (AVRO or JSON) registering `schema_text` on first use,
    one per registry client (two connections to one URL write with their own credentials)."""
    registry = client(url)
    key = (kind, id(registry), schema_text)  # clients are kept for the process: ids stay theirs
    ser = _serializers.get(key)
    if ser is None:
        conf = {"auto.register.schemas": True}
        if kind == "AVRO":
            from confluent_kafka.schema_registry.avro import AvroSerializer

            ser = AvroSerializer(registry, schema_text, conf=conf)
        else:
            from confluent_kafka.schema_registry.json_schema import JSONSerializer

            ser = JSONSerializer(schema_text, registry, conf=conf)
        _serializers[key] = ser
    return ser


def serialize(kind: str, spec, format_name: str, role: str, schema_text: str, value) -> bytes:
    from confluent_kafka.serialization import MessageField, SerializationContext

    url = registry_url(spec, format_name)
    topic = topic_of(spec, format_name)
    ctx = SerializationContext(topic, MessageField.KEY if role == "key" else MessageField.VALUE)
    try:
        return serializer(kind, url, schema_text)(value, ctx)
    except StatementError:
        raise
    except Exception as exc:  # noqa: BLE001 - registry refusals and bad values are user errors
        raise StatementError(redact.text(f"Failed to serialize {role} as {format_name} for subject "
                                         f"{subject(topic, role)} (schema registry at {url}): {exc}")) from exc
