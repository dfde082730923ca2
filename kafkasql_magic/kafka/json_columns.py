"""JSON values decoded in the reader's worker: typed Arrow columns for the records that pyarrow's
C++ JSON reader decodes exactly as the planner's Spark expressions would.

Why: Spark decodes a JSON value with three parses and a cast per column (case-insensitive
members, the trailing-text check), the costliest stage of a JSON query; pyarrow reads a whole
batch in one C++ pass. Exactness first: only flat objects of BOOLEAN, INT, BIGINT, DOUBLE and
STRING columns are decoded here, and only records whose bytes leave no doubt - UTF-8, one
object on one line, a type per member that converts without loss. Every other record (NULL,
not an object, text after the object, a member of another type, a batch pyarrow refuses) is
flagged not decoded and goes through the planner's decoding, which names its error: a bad
record is never dropped and never fails its batch (a batch pyarrow refuses is halved until
the parts it reads are found). Runs on the executors: only plain data in.
"""

from __future__ import annotations

#: The flag column (True: decoded here) and each decoded column's name, by position: a value's,
#: and a key's.
DECODED = "__json_decoded"
COLUMN = "__json_{}"
KEY_DECODED = "__json_key_decoded"
KEY_COLUMN = "__json_key_{}"
NAMES = {"value": (DECODED, COLUMN), "key": (KEY_DECODED, KEY_COLUMN)}

#: Column type -> the Arrow type it is built as.
ARROW_TYPES = {"BOOLEAN": "bool_", "INT": "int32", "BIGINT": "int64", "DOUBLE": "float64", "STRING": "string"}
#: Column type -> the Arrow types pyarrow may infer for its member that convert exactly.
CONVERTIBLE = {"BOOLEAN": ("bool",), "INT": ("int64",), "BIGINT": ("int64",), "DOUBLE": ("int64", "double"),
               "STRING": ("string",)}
INT_RANGE = (-2**31, 2**31 - 1)

#: A record decoded here: one object on one line, no space before it but blanks (Spark's ltrim),
#: no NaN/Infinity (Spark reads them as numbers) and no integer -0 (its DOUBLE is -0.0 in Spark).
_CANDIDATE = r"^ *\{[^\n\r]*\}[ \t]*$"
_DOUBTFUL = r"NaN|Infinity|[:,\[] *-0 *([^ .eE0-9]|$)"
#: The same test cut down for the usual record (`{` first, `}` last): bytes that exclude it, and
#: bytes after which the patterns decide.
_EXCLUDED = (b"\n", b"\r", b"NaN", b"Infinity")
_CHECKED = b"-0"


def worker_fields(value_format: str, options: dict, envelope: str,
                  fields: list[tuple[str, str]]) -> tuple[tuple[str, str], ...] | None:
    """The (member name, type) pairs to decode in the worker, or None when the value is not a
    JSON object of primitive columns (an anonymous value, DEBEZIUM, a nested type)."""
    wrapped = str(options.get("WRAP_SINGLE_VALUE", "true")).lower() != "false" or len(fields) > 1
    if value_format != "JSON" or envelope == "DEBEZIUM" or not fields or not wrapped:
        return None
    return _primitive(fields)


def key_fields(key_format: str, columns) -> tuple[tuple[str, str], ...] | None:
    """The (member name, type) pairs of a JSON key decoded in the worker: the members of a
    key of several columns (an object), or the fields of a single STRUCT key column (the
    key is that object); None for a bare JSON value or nested members. `columns`: the key
    columns' (member name, ast.Type) pairs."""
    if key_format != "JSON" or not columns:
        return None
    if len(columns) > 1:
        return _primitive([(name, t.name) for name, t in columns])
    _, t = columns[0]
    return _primitive([(name, ft.name) for name, ft in t.fields]) if t.name == "STRUCT" and t.fields else None


def _primitive(fields) -> tuple[tuple[str, str], ...] | None:
    return tuple(fields) if all(type_name in ARROW_TYPES for _, type_name in fields) else None


def arrow_fields(fields, role: str = "value"):
    import pyarrow as pa

    flag, column = NAMES[role]
    return [pa.field(flag, pa.bool_())] + [
        pa.field(column.format(i), getattr(pa, ARROW_TYPES[t])()) for i, (_, t) in enumerate(fields)]


#: A batch pyarrow refuses is split in halves, down to parts of this many records, so one odd
#: record leaves only its part to the planner.
SMALLEST = 64


class Decoder:
    """Decodes the batches of one read. Halving a refused batch re-reads at most twice its
    records (enough to find one odd record); after a batch of which nothing was read (a topic whose members do not convert,
    say), the next batch is first tried on its first records only, so such a topic costs the
    worker little more than the planner's own decoding."""

    def __init__(self, fields, smallest: int = SMALLEST):
        self.fields, self.smallest = tuple(fields), smallest
        self.hopeless = False

    def __call__(self, values) -> list:
        """[decoded flag, column per field] for `values` (a binary Arrow array)."""
        import numpy as np
        import pyarrow as pa

        n = len(values)
        types = [getattr(pa, ARROW_TYPES[t])() for _, t in self.fields]
        nothing = [pa.array(np.zeros(n, dtype=bool))] + [pa.nulls(n, t) for t in types]
        at, text = _candidates(values)
        if not len(at):
            return nothing
        if self.hopeless and _read(text.slice(0, self.smallest), self.fields, types) is None:
            return nothing
        parts: list = []
        _read_parts(text, 0, len(text), self.fields, types, self.smallest, parts, [2 * len(text)])
        self.hopeless = not parts
        if not parts:
            return nothing
        rows = at[np.concatenate([np.arange(first, first + count) for first, count, _ in parts])]
        flag = np.zeros(n, dtype=bool)
        flag[rows] = True
        where = np.zeros(n, dtype=np.int64)
        where[rows] = np.arange(len(rows))
        index = pa.array(where, mask=~flag)  # NULL index -> NULL value for records left to Spark
        return [pa.array(flag)] + [pa.concat_arrays([part[2][i] for part in parts]).take(index)
                                   for i in range(len(self.fields))]


def decode(values, fields, smallest: int = SMALLEST) -> list:
    """One batch decoded on its own (see Decoder)."""
    return Decoder(fields, smallest)(values)


def _read_parts(text, first: int, count: int, fields, types, smallest: int, parts: list, budget: list) -> None:
    """Append (first, count, columns) for each part of text[first:first + count] pyarrow reads
    exactly, halving a refused part down to `smallest` records while `budget` (records that
    may be read again) lasts."""
    columns = _read(text.slice(first, count), fields, types)
    if columns is not None:
        parts.append((first, count, columns))
    elif count > smallest and budget[0] >= count:
        budget[0] -= count
        half = count // 2
        _read_parts(text, first, half, fields, types, smallest, parts, budget)
        _read_parts(text, first + half, count - half, fields, types, smallest, parts, budget)


def _candidates(values):
    """(positions, their text) of the records that may be decoded here."""
    import numpy as np
    import pyarrow as pa

    try:
        text = values.cast(pa.string())  # checks UTF-8
        utf8 = None
    except pa.ArrowInvalid:  # some record is not UTF-8 (the planner reports it): find which
        utf8 = pa.array([_is_utf8(v) for v in values.to_pylist()])
        text = values.filter(utf8).cast(pa.string())
    at = np.flatnonzero(candidate_mask(text))
    text = text.take(pa.array(at))
    if utf8 is not None:
        at = np.flatnonzero(utf8.to_numpy(zero_copy_only=False))[at]
    return at, text


def candidate_mask(text):
    """Which records of `text` (a string array) match _CANDIDATE and not _DOUBTFUL, found with
    numpy over the text buffer: the patterns' regular expressions cost ~0.45 us per ~100-byte
    record, this ~0.13. They still decide each record that is not `{...}` with no blanks around,
    or that holds `-0`."""
    import numpy as np
    import pyarrow as pa

    n = len(text)
    keep = np.zeros(n, dtype=bool)
    if n == 0 or text.buffers()[2] is None:
        return keep
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + n + 1].astype(np.int64)
    first, last = offsets[:-1], offsets[1:]
    u8 = np.frombuffer(text.buffers()[2], dtype=np.uint8)
    present = last > first
    if text.null_count:
        present &= text.is_valid().to_numpy(zero_copy_only=False)
    keep[present] = (u8[first[present]] == ord("{")) & (u8[last[present] - 1] == ord("}"))
    odd = np.flatnonzero(present & ~keep)
    start, end = int(offsets[0]), int(offsets[-1])
    for pattern in _EXCLUDED:
        keep[_holding(u8, start, end, pattern, first, last)] = False
    checked = _holding(u8, start, end, _CHECKED, first, last)
    for records in (checked[keep[checked]], odd):
        if len(records):
            keep[records] = _by_patterns(text.take(pa.array(records)))
    return keep


def _holding(u8, start: int, end: int, pattern: bytes, first, last):
    """The records whose text (u8[start:end] holds them all) contains `pattern`."""
    import numpy as np

    at = np.flatnonzero(u8[start:end] == pattern[0]) + start
    for k, byte in enumerate(pattern[1:], 1):
        at = at[at + k < end]
        at = at[u8[at + k] == byte]
    if not len(at):
        return at
    record = np.searchsorted(first, at, side="right") - 1
    return np.unique(record[at + len(pattern) <= last[record]])


def _by_patterns(text):
    import pyarrow.compute as pc

    return pc.and_(pc.match_substring_regex(text, _CANDIDATE), pc.invert(pc.match_substring_regex(text, _DOUBTFUL))
                   ).fill_null(False).to_numpy(zero_copy_only=False)


def _is_utf8(value: bytes | None) -> bool:
    if value is None:
        return False
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read(text, fields, types):
    """The typed columns of `text` (one object each), or None when pyarrow cannot read every
    record as exactly one object with convertible members."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    import numpy as np

    lines = pc.binary_join_element_wise(text, pa.scalar("", pa.string()), "\n")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    data = lines.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    try:
        table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(use_threads=False, block_size=1 << 26),
                             parse_options=pj.ParseOptions(newlines_in_values=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(text):  # one object per record, no more
        return None
    names = table.column_names
    if not all(name.isascii() for name in names):  # Java's and Python's lower() agree on ASCII only
        return None
    columns = []
    for (name, type_name), target in zip(fields, types):
        found = [i for i, member in enumerate(names) if member.lower() == name.lower()] if name.isascii() else \
            [i for i, member in enumerate(names) if member == name]
        if not found:
            columns.append(pa.nulls(len(text), target))
            continue
        if len(found) > 1:  # `id` and `ID` in one batch: the planner picks per record
            return None
        column = table.column(found[0]).combine_chunks()
        if pa.types.is_null(column.type):
            columns.append(pa.nulls(len(text), target))
            continue
        if str(column.type) not in CONVERTIBLE[type_name]:
            return None
        if type_name == "INT":
            low, high = pc.min_max(column).values()
            if low.is_valid and (low.as_py() < INT_RANGE[0] or high.as_py() > INT_RANGE[1]):
                return None
        columns.append(column.cast(target))
    return columns
