"""DESCRIBE, SHOW and PRINT results as pandas DataFrames (what ksqlDB's CLI prints as tables)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pandas as pd

from .. import types
from ..catalog import HEADER, HEADERS, KEY, Catalog, SourceDef
from ..dialects.writable_tables import CONSTANT, is_writable

#: Role -> the note DESCRIBE prints after a column's type.
ROLE_NOTES = {KEY: " (key)", HEADERS: " (headers)"}


def describe(source: SourceDef) -> pd.DataFrame:
    rows = []
    for c in source.star_columns:
        note = ROLE_NOTES.get(c.role, "")
        if c.role == HEADER:
            note = f" (header('{c.header_key}'))"
        if c.role == KEY and source.kind == "TABLE":
            note = " (primary key)"
        rows.append((c.name, types.display(c.type) + note))
    frame = pd.DataFrame(rows, columns=["Field", "Type"])
    frame.attrs.update(name=source.name, kind=source.kind, topic=source.topic,
                       key_format=source.key_format.name, value_format=source.value_format.name)
    return frame


def show_sources(catalog: Catalog, kind: str) -> pd.DataFrame:
    label = "Stream Name" if kind == "STREAM" else "Table Name"
    rows = [(s.name, s.topic, s.key_format.name, s.value_format.name, False)
            for s in catalog if s.kind == kind]
    return pd.DataFrame(rows, columns=[label, "Kafka Topic", "Key Format", "Value Format", "Windowed"])


def show_topics(topics: list[tuple[str, int]]) -> pd.DataFrame:
    rows = sorted((name, partitions) for name, partitions in topics if not name.startswith("_"))
    return pd.DataFrame(rows, columns=["Kafka Topic", "Partitions"])


def show_queries(queries, columns: list[str]) -> pd.DataFrame:
    """Transient push queries as SHOW QUERIES lists them beside persistent ones: of type PUSH, with
    no sink (NULL, as every column a push query has no value for)."""
    rows = [(q.id, "PUSH", q.state, None, None, q.sql) + (None,) * (len(columns) - 6) for q in queries]
    return pd.DataFrame(rows, columns=columns, dtype=object)


def show_properties(settings: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(sorted(settings.items()), columns=["Property", "Value"])


def show_variables(variables: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(sorted(variables.items()), columns=["Variable Name", "Value"])


# ---------------------------------------------------------------- PRINT
def _kafka_number(data: bytes) -> str | None:
    if len(data) == 4:
        return "KAFKA_INT"
    if len(data) == 8:
        return "KAFKA_BIGINT or KAFKA_DOUBLE"
    return None


def _detect(data: bytes | None) -> list[str]:
    """Formats `data` could be in, most specific first (ksqlDB PRINT's idea of detection)."""
    if data is None:
        return []
    found = []
    if len(data) >= 5 and data[0] == 0:
        found.append("AVRO or JSON_SR or PROTOBUF (schema registry framing)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        try:
            json.loads(text)
            found.append("JSON")
        except ValueError:
            pass
    number = _kafka_number(data)
    if number:
        found.append(number)
    if text is not None and text.isprintable():
        found.append("KAFKA_STRING")
    found.append("HEX")
    return found


def common_format(values: list[bytes | None]) -> str:
    """The first format every non-null value fits, as PRINT reports it."""
    candidates = None
    for v in values:
        if v is None:
            continue
        fits = _detect(v)
        candidates = fits if candidates is None else [f for f in candidates if f in fits]
    if candidates is None:
        return "¯\\_(ツ)_/¯ - no data processed"
    return candidates[0] if candidates else "HEX"


def _show(data: bytes | None, fmt: str) -> str:
    if data is None:
        return "<null>"
    if fmt == "KAFKA_INT":
        return str(int.from_bytes(data, "big", signed=True))
    if fmt in ("JSON", "KAFKA_STRING"):
        return data.decode("utf-8")
    return data.hex()


def print_records(records: list[dict]) -> pd.DataFrame:
    key_format = common_format([r["key"] for r in records])
    value_format = common_format([r["value"] for r in records])
    rows = [
        (datetime.fromtimestamp(r["timestamp"] / 1000, tz=timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] + " Z",
         r["partition"], r["offset"], _show(r["key"], key_format), _show(r["value"], value_format),
         [(k, None if v is None else _show(v, "KAFKA_STRING" if _printable(v) else "HEX")) for k, v in r["headers"]])
        for r in records
    ]
    frame = pd.DataFrame(rows, columns=["rowtime", "partition", "offset", "key", "value", "headers"])
    frame.attrs.update(key_format=key_format, value_format=value_format)
    return frame


def _printable(data: bytes) -> bool:
    try:
        return data.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


#: The property a table made by Materialize's CREATE TABLE ... FROM SOURCE keeps its source's name in.
FROM_SOURCE = "FROM SOURCE"


def _source_table(relation) -> bool:
    return FROM_SOURCE in getattr(relation, "properties", {})


def show_relations(catalog: Catalog, kind: str) -> pd.DataFrame:
    """Materialize's SHOW SOURCES (`name`, `type`, `cluster`: every Kafka-backed relation of
    either dialect but the tables made FROM SOURCE; there are no clusters here, so NULL) and
    SHOW VIEWS."""
    if kind == "VIEW":
        return pd.DataFrame([(v.name, v.statement) for v in catalog if v.kind == "VIEW"], columns=["name", "definition"])
    rows = [(s.name, "kafka", None) for s in catalog if s.kind != "VIEW" and not _source_table(s)
            and not is_writable(s)]
    return pd.DataFrame(rows, columns=["name", "type", "cluster"])


def show_source_tables(catalog: Catalog) -> pd.DataFrame:
    """Materialize's SHOW TABLES: the tables made with CREATE TABLE ... FROM SOURCE or as writable
    tables (not the hidden ones of constant relations) (`name`, `comment`)."""
    return pd.DataFrame([(t.name, catalog.comments.of(t.name)) for t in catalog if _source_table(t) or
                         is_writable(t) and not t.properties.get(CONSTANT)], columns=["name", "comment"])


def describe_columns(name: str, columns: list[tuple[str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(columns, columns=["Field", "Type"])
    frame.attrs.update(name=name, kind="VIEW")
    return frame
