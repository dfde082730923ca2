"""Flat Avro records read column by column (formats.avro_vector) give exactly what fastavro
record by record gives: the same values, the same error for every record it cannot read."""

from __future__ import annotations

import io
import json
import random

import fastavro
import pyarrow as pa
import pytest

from kafkasql_magic.formats import avro_decode, avro_vector
from kafkasql_magic.formats.avro_decode import ERROR_FIELD, Layout, decode_batch
from kafkasql_magic.sql import ast

SCHEMA = {"type": "record", "name": "R", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": ["null", "long"]},
    {"name": "f", "type": "float"}, {"name": "d", "type": ["double", "null"]}, {"name": "s", "type": "string"},
    {"name": "y", "type": ["null", "bytes"]}, {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "skipped", "type": "string"}]}
FIELDS = tuple((n, ast.Type(t)) for n, t in (("B", "BOOLEAN"), ("I", "INT"), ("L", "BIGINT"), ("F", "DOUBLE"),
                                              ("D", "DOUBLE"), ("S", "STRING"), ("Y", "BYTES"), ("DAY", "DATE"),
                                              ("TS", "TIMESTAMP"), ("MISSING", "STRING")))


def _record(rng: random.Random) -> dict:
    import datetime as dt

    return {"b": rng.random() < 0.5, "i": rng.randint(-2**31, 2**31 - 1), "l": rng.choice([None, rng.randint(-2**63, 2**63 - 1)]),
            "f": rng.uniform(-1e6, 1e6), "d": rng.choice([None, rng.uniform(-1e300, 1e300), 0.0]),
            "s": "".join(rng.choice("aé€😀 x") for _ in range(rng.randint(0, 12))),
            "y": rng.choice([None, bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 6)))]),
            "day": dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-10000, 30000)),
            "ts": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=rng.randint(0, 10**11)),
            "skipped": "x" * rng.randint(0, 3)}


def _payloads(n: int, seed: int) -> list[bytes | None]:
    """Good records and, among them, every kind of damage: cut short, bytes added, bytes changed,
    a bad union branch, a boolean byte of 2, an int beyond 32 bits, strings that are not UTF-8."""
    rng = random.Random(seed)
    parsed = fastavro.parse_schema(SCHEMA)
    out: list[bytes | None] = []
    for k in range(n):
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, _record(rng))
        body = bytearray(buffer.getvalue())
        damage = k % 8
        if damage == 1:
            body = body[:rng.randint(0, len(body) - 1)]
        elif damage == 2:
            body += bytes([rng.randint(0, 255)])
        elif damage == 3:
            for _ in range(rng.randint(1, 3)):
                body[rng.randrange(len(body))] = rng.randint(0, 255)
        elif damage == 4:
            body[0] = 2  # a boolean byte that is neither 0 nor 1
        elif damage == 5:
            body[1:1] = b"\x80\x80\x80\x80\x10"  # an int varint beyond 32 bits
        out.append(b"\x00\x00\x00\x00\x01" + bytes(body) if k % 29 else None)
    out.append(b"\x00\x00\x00\x00\x01" + b"\x00\x00\x04\xff\xfe" + b"\x00" * 30)  # a string of 2 bytes not UTF-8
    return out


def _decode(values, monkeypatch, columns: bool, read_by_columns: list | None = None):
    avro_decode._readers.clear()
    with monkeypatch.context() as m:
        if not columns:
            m.setattr(avro_vector, "layout", lambda record: None)
        real = avro_vector.read

        def counted(*args):
            natural, read = real(*args)
            read_by_columns.append(int(read.sum()))
            return natural, read
        if read_by_columns is not None:
            m.setattr(avro_vector, "read", counted)
        layout = Layout(FIELDS, False, None, json.dumps(SCHEMA), True)
        return decode_batch(pa.array(values, pa.binary()), layout)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_column_reading_is_record_for_record_what_fastavro_gives(seed, monkeypatch):
    values = _payloads(400, seed)
    read_by_columns: list = []
    by_columns = _decode(values, monkeypatch, columns=True, read_by_columns=read_by_columns)
    by_records = _decode(values, monkeypatch, columns=False)
    assert by_columns.to_pylist() == by_records.to_pylist()
    errors = by_records.field(ERROR_FIELD).to_pylist()
    assert 100 < sum(e is not None for e in errors) < 300  # the damage is there, and so are good records
    good = sum(e is None and v is not None for e, v in zip(errors, values))
    odd_boolean = sum(v is not None and len(v) > 5 and v[5] > 1 for v in values)  # fastavro takes any byte but 0 as true
    assert sum(read_by_columns) >= good - odd_boolean  # the good records are read by columns
    assert sum(read_by_columns) < sum(v is not None for v in values)  # never a bad one
    assert any("left over" in e for e in errors if e) and any("truncated" in e or "Error" in e for e in errors if e)


def test_which_schemas_are_read_by_columns():
    assert [f[:3] for f in avro_vector.layout(SCHEMA)][:3] == [("b", "boolean", "bool_"), ("i", "int", "int32"),
                                                               ("l", "long", "int64")]
    nested = {"type": "record", "name": "N", "fields": [{"name": "a", "type": {"type": "array", "items": "int"}}]}
    assert avro_vector.layout(nested) is None
    union = {"type": "record", "name": "U", "fields": [{"name": "a", "type": ["null", "int", "string"]}]}
    assert avro_vector.layout(union) is None
    decimal = {"type": "record", "name": "D", "fields": [
        {"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}}]}
    assert avro_vector.layout(decimal) is None
