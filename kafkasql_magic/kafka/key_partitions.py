"""Which partitions hold the rows of some keys: the keys serialized with the table's key
format, placed by Kafka's default partitioner (murmur2), as ksqlDB, Kafka Streams, our sink
and INSERT VALUES write them. A windowed table's rows are where Kafka Streams' windowed
partitioner puts them, as ksqlDB and our windowed sinks write them: in the inner key's partition,
so a windowed key is looked up by its inner key's bytes alone.

Only a serialization with one spelling per value can be recomputed: KAFKA keys (INT, BIGINT,
DOUBLE, STRING), and JSON or DELIMITED keys of one INT, BIGINT or STRING column whose text
needs no escaping or quoting (ASCII only, for JSON). Registry formats (AVRO, JSON_SR, PROTOBUF)
carry a schema id in the key bytes: for those, and for any value that does not fit the key's
type, the answer is None (read every partition).
"""

from __future__ import annotations

from typing import Iterable

from .. import formats
from ..catalog import SourceDef
from ..formats import Field
from .partitioner import default_partition

#: key format -> key types whose bytes are one canonical serialization of the value.
CANONICAL = {
    "KAFKA": frozenset({"INT", "BIGINT", "DOUBLE", "STRING"}),
    "JSON": frozenset({"INT", "BIGINT", "STRING"}),
    "DELIMITED": frozenset({"INT", "BIGINT", "STRING"}),
}

_INT_RANGES = {"INT": 1 << 31, "BIGINT": 1 << 63}


def _typed(value, type_name: str):
    """`value` as a value of the key's type, or None when it is not one exactly."""
    if type_name in _INT_RANGES:
        bound = _INT_RANGES[type_name]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound else None
    if type_name == "DOUBLE":
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def _plain_text(text: str, format_name: str, delimiter: str) -> bool:
    """Text that JSON writers never escape and CSV writers never quote or trim."""
    if any(ord(ch) < 0x20 or ch in '"\\' for ch in text):
        return False
    if format_name == "DELIMITED":
        return bool(text) and text == text.strip() and delimiter not in text
    return text.isascii()  # JSON writers differ on escaping the rest (\u00e9 or the UTF-8 bytes)


def key_bytes(source: SourceDef, value) -> bytes | None:
    """The key bytes of the row whose single key column is `value` (a windowed source's inner
    key: the partitioner hashes no window), when they can be known."""
    if len(source.key_columns) != 1:
        return None
    column = source.key_columns[0]
    spec = source.key_format
    if column.type.name not in CANONICAL.get(spec.name, ()):
        return None
    typed = _typed(value, column.type.name)
    if typed is None:
        return None
    if isinstance(typed, str) and spec.name != "KAFKA":
        from ..formats.delimited import delimiter

        if not _plain_text(typed, spec.name, delimiter(spec, "key") if spec.name == "DELIMITED" else ""):
            return None
    return formats.lookup(spec.name).encode([typed], [Field(column.format_field, column.type)], spec, "key")


def key_partitions(source: SourceDef, values: Iterable, partitions: int) -> tuple[int, ...] | None:
    """The sorted partitions the rows of `values` are in, or None when any key's is unknown."""
    found = set()
    for value in values:
        raw = key_bytes(source, value)
        if raw is None:
            return None
        found.add(default_partition(raw, partitions))
    return tuple(sorted(found))


def lookup_partitions(bootstrap: str, source: SourceDef, values: Iterable) -> tuple[int, ...] | None:
    """`key_partitions` over the topic's current partition count (one metadata request)."""
    from . import admin

    if all(key_bytes(source, v) is None for v in values):
        return None
    return key_partitions(source, values, len(admin.topic_partitions(bootstrap, source.topic)))
