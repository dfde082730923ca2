"""A STRUCT grouping key goes into Spark's keyed state as its leaf fields.

`transformWithState` keyed by a STRUCT column (`GROUP BY STRUCT(f1:=a, f2:=b)`) handed every
struct key of a micro-batch's partition one and the same state: each group's count went on
from the previous group's. Scalars key it correctly, so a struct key goes in as one grouping
column per leaf field (and, for a nested struct, one saying whether it is NULL), and
`restore` makes the struct again from the step's output, under its own name and in its place.
A processor sees the flat key in its `key` tuple and writes it back as it got it.

A TIME key (or a TIME field of a struct key) goes in as its microseconds of the day: Spark's
state store turns the grouping key's schema into an Avro schema, which has no TIME
(IncompatibleSchemaException), and comes back as the TIME after the step. An ARRAY key (or
field: `GROUP BY ARRAY[a, b]`) goes in as its JSON text: PySpark 4.3's worker cannot read an
array in the grouping key's schema (`KeyError: 'elementType'` in `StructType.fromJson`), and
the query failed at its first record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T


@dataclass
class FlatKeys:
    """The grouping columns to key the state by, and how each struct key is made again."""
    keys: list[str]
    structs: dict[str, Column] = field(default_factory=dict)  # a struct or TIME key's name -> its rebuilt value
    leaves: dict[str, list[str]] = field(default_factory=dict)  # a struct or TIME key's name -> its flat columns

    def restore(self, frame: DataFrame) -> DataFrame:
        """`frame` (the step's output, starting with the flat keys) with each struct and TIME key again."""
        if not self.structs:
            return frame
        columns = []
        for name in frame.columns:
            owner = next((key for key, flat in self.leaves.items() if name in flat), None)
            if owner is None:
                columns.append(F.col(name))
            elif name == self.leaves[owner][0]:
                columns.append(self.structs[owner].alias(owner))
        return frame.select(*columns)


def flat_keys(frame: DataFrame, keys: list[str]) -> tuple[DataFrame, FlatKeys]:
    """`frame` with each STRUCT column of `keys` replaced, in place, by its flat columns, and each
    TIME column by its microseconds of the day."""
    schema = frame.schema
    if not any(isinstance(schema[k].dataType, (T.StructType, T.TimeType, T.ArrayType)) for k in keys):
        return frame, FlatKeys(list(keys))
    flat, out, columns = FlatKeys([]), [], {}
    for key in keys:
        dtype = schema[key].dataType
        if isinstance(dtype, (T.TimeType, T.ArrayType)):
            stored, flat.structs[key] = _stored(F.col(key), F.col(key), dtype)
            flat.leaves[key] = [key]
            columns[key] = [(key, stored)]
        if not isinstance(dtype, T.StructType):
            flat.keys.append(key)
            continue
        leaves: list[tuple[str, Column]] = []
        flat.structs[key] = _flatten(F.col(key), dtype, f"{key}__", leaves)
        flat.leaves[key] = [name for name, _ in leaves]
        flat.keys += flat.leaves[key]
        columns[key] = leaves
    for name in frame.columns:
        if name in columns:
            out += [value.alias(leaf) for leaf, value in columns[name]]
        else:
            out.append(F.col(name))
    return frame.select(*out), flat


def _flatten(value: Column, dtype: T.StructType, prefix: str, leaves: list) -> Column:
    """Adds `value`'s leaf fields to `leaves` as (column name, value); returns the struct rebuilt
    from those columns. A nested struct also adds whether it is NULL, to rebuild a NULL."""
    parts = []
    for n, f in enumerate(dtype.fields):
        inner, name = value.getField(f.name), f"{prefix}{n}"
        if isinstance(f.dataType, T.StructType):
            leaves.append((f"{name}__null", inner.isNull()))
            rebuilt = _flatten(inner, f.dataType, f"{name}__", leaves)
            parts.append(F.when(~F.col(f"{name}__null"), rebuilt).alias(f.name))
        elif isinstance(f.dataType, (T.TimeType, T.ArrayType)):
            stored, rebuilt = _stored(inner, F.col(name), f.dataType)
            leaves.append((name, stored))
            parts.append(rebuilt.alias(f.name))
        else:
            leaves.append((name, inner))
            parts.append(F.col(name).alias(f.name))
    return F.struct(*parts)


def _stored(value: Column, stored: Column, dtype: T.DataType) -> tuple[Column, Column]:
    """A TIME or ARRAY key's form in the grouping key (microseconds of the day, JSON text), and
    the key again from that form's column `stored`."""
    if isinstance(dtype, T.TimeType):
        return F.time_to_micros(value), F.time_from_micros(stored).cast(dtype)
    return F.to_json(value), F.from_json(stored, dtype)
