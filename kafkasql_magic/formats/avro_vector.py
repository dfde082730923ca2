"""Avro records of primitive fields read column by column across a whole batch with numpy.

Why: fastavro reads one record per Python call (~1.5 us each, most of AVRO's decoding cost).
A flat record (every field boolean, int, long, float, double, string or bytes, each maybe in a
union with null; logical types over int/long/string) has every field at a position that numpy
can advance for all records at once: zig-zag varints, little-endian floats, length-prefixed
bytes. Exactness first: a record is read here only when every step is unambiguous (varints of
at most 10 bytes, union branch 0 or 1, booleans 0 or 1, ints within 32 bits, UTF-8 strings, no
read past its end) and it ends exactly where its bytes end. Every other record is flagged and
left to fastavro (`avro_decode._read`), which reads it or names its error.
"""

from __future__ import annotations

#: Avro kind (after logical types) -> (wire reading, natural Arrow type name).
WIRE = {
    "boolean": ("boolean", "bool_"), "int": ("int", "int32"), "long": ("long", "int64"),
    "float": ("float", "float32"), "double": ("double", "float64"), "string": ("bytes", "string"),
    "bytes": ("bytes", "binary"), "date": ("int", "int32"), "time-millis": ("int", "int32"),
    "time-micros": ("long", "int64"), "timestamp-millis": ("long", "int64"),
    "timestamp-micros": ("long", "int64"), "local-timestamp-millis": ("long", "int64"),
    "local-timestamp-micros": ("long", "int64"), "uuid": ("bytes", "string"),
}
INT32 = (-2**31, 2**31 - 1)


def layout(record: dict) -> list | None:
    """[(field name, wire kind, natural type name, null branch or None)] for a record schema
    whose fields all read column-wise, else None."""
    out = []
    for f in record.get("fields", ()):
        t, null_branch = f["type"], None
        if isinstance(t, list):
            if len(t) != 2 or "null" not in t:
                return None
            null_branch = t.index("null")
            t = t[1 - null_branch]
        kind = _kind(t)
        if kind not in WIRE:
            return None
        out.append((f["name"], *WIRE[kind], null_branch))
    return out or None


def _kind(t) -> str | None:
    if isinstance(t, str):
        return t
    if isinstance(t, dict):
        logical = t.get("logicalType")
        if logical is not None:
            base = t.get("type")
            return logical if logical in WIRE and WIRE[logical][0] == WIRE.get(base, ("",))[0] else None
        return t.get("type") if t.get("type") in ("boolean", "int", "long", "float", "double", "string", "bytes") \
            else None
    return None


def read(fields: list, data, starts, ends, natural):
    """(struct array of `natural` for the records read here, which records they are: a bool
    mask over starts/ends). `data`: the batch's bytes (uint8), `starts`/`ends`: each record's
    payload bounds."""
    import numpy as np
    import pyarrow as pa

    m = len(starts)
    if not len(data):
        data = np.zeros(1, np.uint8)
    pos = starts.astype(np.int64).copy()
    ends = ends.astype(np.int64)
    ok = np.ones(m, dtype=bool)
    columns = {}
    for name, wire, natural_name, null_branch in fields:
        present = ok.copy()
        if null_branch is not None:
            branch = _varint(data, pos, ends, ok)
            ok &= (branch == 0) | (branch == 1)
            present = ok & (branch != null_branch)
        values = _value(data, pos, ends, ok, present, wire)
        columns[name] = (values, present)
    ok &= pos == ends  # the record ends exactly where its bytes end
    for name, _, natural_name, _ in fields:  # a string that is not UTF-8: fastavro names the error
        if natural_name == "string" and ok.any():
            ok &= _utf8(*columns[name][0], columns[name][1] & ok, data, np)
    keep = pa.array(ok)
    children = [_arrow(*columns[f.name], ok, f.type, data, np, pa).filter(keep) for f in natural]
    return pa.StructArray.from_arrays(children, fields=list(natural)), ok


def _varint(data, pos, ends, ok):
    """Zig-zag varints at `pos` for the rows still ok (advancing pos); a varint that runs past its
    record or over 10 bytes clears ok."""
    import numpy as np

    m = len(pos)
    result = np.zeros(m, dtype=np.uint64)
    active = ok.copy()
    last = len(data) - 1
    for k in range(10):
        inside = pos < ends
        ok &= ~active | inside
        active &= inside
        if not active.any():
            break
        byte = data[np.where(active, pos, 0).clip(0, last)].astype(np.uint64)
        if k == 9:
            ok &= ~active | (byte <= 1)
            active &= byte <= 1
        result[active] |= (byte[active] & np.uint64(0x7F)) << np.uint64(7 * k)
        pos[active] += 1
        active &= byte >= 0x80
    ok &= ~active  # still going after 10 bytes
    return (result >> np.uint64(1)).astype(np.int64) ^ -(result & np.uint64(1)).astype(np.int64)


def _value(data, pos, ends, ok, present, wire):
    """One field's values for the `present` rows (advancing pos); bytes as (starts, lengths)."""
    import numpy as np

    take = present & ok
    if wire in ("int", "long"):
        read = take.copy()
        values = _varint(data, pos, ends, read)
        ok &= ~take | read
        if wire == "int":
            ok &= ~take | ((values >= INT32[0]) & (values <= INT32[1]))
        return values
    if wire in ("boolean", "float", "double"):
        width = {"boolean": 1, "float": 4, "double": 8}[wire]
        ok &= ~take | (pos + width <= ends)
        take &= ok
        at = np.where(take, pos, 0)
        raw = data[(at[:, None] + np.arange(width)).clip(0, len(data) - 1)]
        pos[take] += width
        if wire == "boolean":
            ok &= ~take | (raw[:, 0] <= 1)
            return raw[:, 0] == 1
        return raw.copy().view("<f4" if wire == "float" else "<f8")[:, 0]
    read = take.copy()  # bytes / string: a length, then the bytes
    lengths = _varint(data, pos, ends, read)
    ok &= ~take | read
    ok &= ~take | ((lengths >= 0) & (pos + lengths <= ends))
    take &= ok
    starts = pos.copy()
    pos[take] += lengths[take]
    return starts, np.where(take, lengths, 0)


def _gather(starts, lengths, valid, data, np, pa):
    """A large_binary array of each valid row's bytes (NULL elsewhere)."""
    lengths = np.where(valid, lengths, 0)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    validity = pa.array(valid, pa.bool_()).buffers()[1]
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                            [validity, pa.py_buffer(offsets), pa.py_buffer(data[index].tobytes())])


def _utf8(starts, lengths, valid, data, np):
    """False for the rows whose bytes are not UTF-8."""
    import pyarrow as pa

    array = _gather(starts, lengths, valid, data, np, pa)
    try:
        array.cast(pa.large_string())
        return np.ones(len(valid), dtype=bool)
    except pa.ArrowInvalid:
        return np.array([_decodes(v) for v in array.to_pylist()])


def _decodes(value) -> bool:
    try:
        value is None or value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _arrow(values, present, ok, arrow_type, data, np, pa):
    valid = present & ok
    if pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type):
        array = _gather(*values, valid, data, np, pa)
        return array.cast(pa.large_string()).cast(arrow_type) if pa.types.is_string(arrow_type) \
            else array.cast(arrow_type)
    return pa.array(values, mask=~valid).cast(arrow_type)
