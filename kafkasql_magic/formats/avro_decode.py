"""AVRO on the executors: one Arrow batch of Confluent-framed (or bare) records -> the
declared columns and an error per record, never raising (see `formats/avro.py`).

Per batch it parses the 5-byte headers with numpy, groups records by schema id, fetches each
writer schema once per Python worker (cached), reads every record with fastavro from one
buffer (a record must end exactly where its bytes end) and converts the records to the
declared columns with Arrow kernels (`avro_types.plan`).
"""

from __future__ import annotations

import io

from ..sql import ast
from . import avro_types, avro_vector
from . import schema_registry as sr

#: The UDF's error field, named so it cannot clash with a declared column.
ERROR_FIELD = "__kafkasql_avro_error__"


class Layout:
    """What the UDF needs, as plain picklable data: declared columns, wrapping, where the
    writer schema comes from (the registry, by the id framing each record, or one inline
    schema: Materialize's AVRO USING SCHEMA) and whether records carry the Confluent header
    (always with the registry; by default with an inline schema, whose id is then ignored)."""

    def __init__(self, fields: tuple, anonymous: bool, url: str | None, inline: str | None = None,
                 framed: bool = True, registry: dict | None = None):
        self.fields = fields
        self.registry = dict(registry or {})  # registry client properties for the executors
        self.anonymous = anonymous
        self.url = url
        self.inline = inline
        self.framed = framed
        self.key = repr((fields, anonymous, url, inline, framed))
        self._target = None

    def target(self):
        """The Arrow struct of the declared columns, as Spark expects them back."""
        if self._target is None:
            import pyarrow as pa

            self._target = pa.struct([pa.field(n, avro_types.arrow_type(t)) for n, t in self.fields])
        return self._target

    def __getstate__(self):
        return (self.fields, self.anonymous, self.url, self.inline, self.framed, self.registry)

    def __setstate__(self, state):
        self.__init__(*state)


class Reader:
    """One writer schema read into one layout (cached per process by schema id and layout)."""

    def __init__(self, parsed, plan: avro_types.Plan, wrap: bool, columns: list | None = None):
        self.parsed = parsed
        self.fast = None  # fastavro's compiled record reader once checked (see _record_reader)
        self.plan = plan
        self.wrap = wrap  # anonymous: the one column's array is wrapped into the output struct
        self.columns = columns  # a flat record's fields, read column by column (avro_vector)

    def to_struct(self, records, target):
        """Python records (None for skipped rows) -> a struct array of the declared columns."""
        import pyarrow as pa

        out = self.plan.conform(pa.array(records, type=self.plan.natural))
        return pa.StructArray.from_arrays([out], fields=list(target)) if self.wrap else out


_readers: dict[tuple, object] = {}


def reader_for(layout: Layout, schema_id: int):
    """The cached Reader for `schema_id`, or the error text every record with that id gets."""
    key = (layout.key, schema_id)
    found = _readers.get(key)
    if found is not None:
        return found
    try:
        registered = (sr.Registered("AVRO", layout.inline) if layout.inline is not None
                      else sr.schema_by_id(layout.url, schema_id, layout.registry))
    except sr.SchemaLookupError as exc:
        return str(exc)  # not cached here: schema_registry remembers failures briefly
    if registered.schema_type.upper() != "AVRO":
        found = f"Schema id {schema_id} is a {registered.schema_type} schema, not AVRO"
    else:
        try:
            found = _build_reader(layout, registered)
        except avro_types.AvroTypeError as exc:
            found = f"Schema id {schema_id} does not match the declared columns: {exc}"
        except Exception as exc:  # noqa: BLE001 - an unparsable registered schema
            found = f"Schema id {schema_id} cannot be used: {exc}"
    _readers[key] = found
    return found


def _build_reader(layout: Layout, registered) -> Reader:
    parsed, writer = avro_types.parse_writer(registered.text, registered.references)
    fields = layout.fields
    top = avro_types.non_null(writer, "")
    record = avro_types.kind(top) == "record"
    if len(fields) == 1 and (not record or (layout.anonymous and _record_is_the_value(top, fields[0]))):
        name, t = fields[0]
        return Reader(parsed, avro_types.plan(writer, t, ""), wrap=True)
    if not record:
        raise avro_types.AvroTypeError(
            f"the schema is {avro_types.describe(top)}, not a record with fields "
            + ", ".join(f"`{n}`" for n, _ in fields))
    struct = ast.Type("STRUCT", fields=fields)
    columns = avro_vector.layout(top) if top is writer else None  # not under a union's branch index
    return Reader(parsed, avro_types.plan(top, struct, ""), wrap=False, columns=columns)


def _record_is_the_value(record, field) -> bool:
    """An anonymous column reads the whole record when it is a STRUCT, unless the record is
    a wrapper with one field of that column's name."""
    name, t = field
    if t.name != "STRUCT":
        return False
    inner = avro_types.find_field(record, name)
    return not (inner is not None and len(record["fields"]) == 1 and avro_types.is_record(inner["type"]))


def decode_batch(values, layout: Layout):
    """binary Arrow array -> struct<declared columns..., error>; never raises."""
    import numpy as np
    import pyarrow as pa

    target = layout.target()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    errors: list = [None] * n
    if n == 0:
        return pa.StructArray.from_arrays([pa.nulls(0, f.type) for f in target] + [pa.nulls(0, pa.string())],
                                          fields=list(target) + [pa.field(ERROR_FIELD, pa.string())])
    try:
        starts, ends, data, valid = _buffers(values)
        header = sr.HEADER_SIZE if layout.framed else 0
        if layout.framed:
            framed = valid & (ends - starts >= sr.HEADER_SIZE)
            framed[framed] = data[starts[framed]] == sr.MAGIC_BYTE
        else:  # bare records, every one written with the inline schema
            framed = valid.copy()
        for i in np.nonzero(valid & ~framed)[0].tolist():
            errors[i] = sr.framing_problem(values[i].as_py())
        ids = np.zeros(n, dtype=np.int64)
        if framed.any() and layout.inline is None:
            s = starts[framed]
            ids[framed] = ((data[s + 1].astype(np.int64) << 24) | (data[s + 2].astype(np.int64) << 16)
                           | (data[s + 3].astype(np.int64) << 8) | data[s + 4].astype(np.int64))
        pieces, order = [], []
        buffer = io.BytesIO(data.tobytes()) if framed.any() else None
        for schema_id in np.unique(ids[framed]).tolist():
            rows = np.nonzero(framed & (ids == schema_id))[0]
            reader = reader_for(layout, schema_id)
            if isinstance(reader, str):
                for i in rows.tolist():
                    errors[i] = reader
                continue
            label = "with the inline schema" if layout.inline is not None else f"for id {schema_id}"
            rows = _read_columns(reader, data, rows, starts + header, ends, pieces, order)
            if len(rows):
                records = _read(reader, buffer, rows, starts, ends, errors, label, header)
                pieces.append(_to_struct_safely(reader, records, rows, target, errors))
                order.append(rows)
        columns = _assemble(pieces, order, n, target)
    except sr.RegistryUnavailable:
        raise  # the query stops with the reason rather than lose records it could decode later
    except Exception as exc:  # noqa: BLE001 - last resort: the whole batch becomes errors
        columns = [pa.nulls(n, f.type) for f in target]
        errors = [None if v is None else f"Unexpected error decoding AVRO: {exc!r}" for v in values.to_pylist()]
    return pa.StructArray.from_arrays(
        columns + [pa.array(errors, type=pa.string())],
        fields=list(target) + [pa.field(ERROR_FIELD, pa.string())])


def _read_columns(reader: Reader, data, rows, starts, ends, pieces: list, order: list):
    """Read the records of a flat schema column by column (avro_vector), appending what was read
    to pieces/order; return the rows left to fastavro (all of them for other schemas, or when
    the columns do not convert: the row-by-row path then finds the record at fault)."""
    if reader.columns is None:
        return rows
    natural, read = avro_vector.read(reader.columns, data, starts[rows], ends[rows], reader.plan.natural)
    if not read.any():
        return rows
    try:
        pieces.append(reader.plan.conform(natural))
    except Exception:  # noqa: BLE001 - e.g. a value out of the declared type's range
        return rows
    order.append(rows[read])
    return rows[~read]


def _buffers(values):
    """(starts, ends, data bytes as uint8, validity) of a binary or large_binary array."""
    import numpy as np
    import pyarrow as pa

    n = len(values)
    large = pa.types.is_large_binary(values.type)
    bufs = values.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=values.offset + n + 1)
    offsets = offsets[values.offset:].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(0, np.uint8)
    valid = np.ones(n, dtype=bool) if values.null_count == 0 else values.is_valid().to_numpy(zero_copy_only=False)
    return offsets[:-1], offsets[1:], data, valid


_FASTAVRO_OPTIONS = {"return_record_name": False, "return_record_name_override": False,
                     "return_named_type": False, "return_named_type_override": False,
                     "handle_unicode_errors": "strict"}


def _record_reader(reader: Reader, buffer, first: int):
    """`fo -> record` for this schema. fastavro's compiled `_read_data` skips the ~1.5 us of
    per-call set-up `schemaless_reader` repeats for every record; it is private API, so it is
    used only once it read a record exactly as `schemaless_reader` does (else, or if missing,
    the public reader)."""
    from fastavro import schemaless_reader

    parsed = reader.parsed
    public = lambda fo: schemaless_reader(fo, parsed)  # noqa: E731
    if reader.fast is None:
        try:
            buffer.seek(first)
            expected, end = public(buffer), buffer.tell()
        except Exception:  # noqa: BLE001 - a bad first record: check on the next batch
            return public
        try:
            from fastavro._read import _read_data

            named = {"writer": parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}, "reader": {}}
            fast = lambda fo: _read_data(fo, parsed, named, None, _FASTAVRO_OPTIONS)  # noqa: E731
            buffer.seek(first)
            reader.fast = fast if (fast(buffer) == expected and buffer.tell() == end) else False
        except Exception:  # noqa: BLE001 - no such function, or another signature
            reader.fast = False
    return reader.fast or public


def _read(reader: Reader, buffer, rows, starts, ends, errors, label: str, header: int):
    """fastavro-read each row of one schema id from the batch's data buffer. A record must
    end exactly where its bytes end: fastavro stops where the schema is satisfied, so bytes
    left over (or a read past the end, into the next record) mean the bytes are not a record
    of this schema, and the row is an error rather than a plausible wrong value."""
    seek, tell = buffer.seek, buffer.tell
    records = []
    append = records.append
    row_list = rows.tolist()
    payload_starts = (starts[rows] + header).tolist()
    read = _record_reader(reader, buffer, payload_starts[0])
    for i, start, end in zip(row_list, payload_starts, ends[rows].tolist()):
        seek(start)
        try:
            record = read(buffer)
        except Exception as exc:  # noqa: BLE001
            errors[i] = f"Error deserializing AVRO message {label}: {type(exc).__name__}: {exc}"
            append(None)
            continue
        stop = tell()
        if stop > end:
            errors[i] = (f"Error deserializing AVRO message {label}: record is truncated "
                         f"(needs more than its {end - start} payload bytes)")
            record = None
        elif stop < end:
            errors[i] = (f"Error deserializing AVRO message {label}: {end - stop} bytes left over "
                         f"after the record (its payload has {end - start} bytes)")
            record = None
        append(record)
    return records


def _to_struct_safely(reader: Reader, records, rows, target, errors):
    """The batch at once; row by row when a value does not convert (the row gets the error)."""
    import pyarrow as pa

    try:
        return reader.to_struct(records, target)
    except Exception:  # noqa: BLE001 - find the offending rows
        pass
    parts = []
    for i, record in zip(rows.tolist(), records):
        try:
            parts.append(reader.to_struct([record], target))
        except Exception as exc:  # noqa: BLE001
            errors[i] = f"Cannot convert the AVRO record to the declared columns: {exc}"
            parts.append(reader.to_struct([None], target))
    return pa.concat_arrays(parts)


def _assemble(pieces, order, n, target):
    """Per-schema-id struct arrays -> the declared columns in row order (NULLs elsewhere)."""
    import numpy as np
    import pyarrow as pa

    if len(pieces) == 1 and len(order[0]) == n:
        return pieces[0].flatten()
    covered = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    rest = np.setdiff1d(np.arange(n), covered, assume_unique=True)
    pieces = pieces + [pa.StructArray.from_arrays([pa.nulls(len(rest), f.type) for f in target],
                                                  fields=list(target))]
    stacked = pa.concat_arrays(pieces)
    position = np.empty(n, dtype=np.int64)
    position[np.concatenate(order + [rest])] = np.arange(n)
    return stacked.take(pa.array(position)).flatten()
