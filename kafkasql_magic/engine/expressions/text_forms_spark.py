"""A list's, map's or record's text form read from a text column at run time (`t::int list`,
`t::point`), as `sql.collection_text` reads a quoted literal at planning: a Python UDF per cast,
giving the value and, for malformed text, Materialize's message (the record is then logged and
fails a Materialize query, as any expression's error does)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ... import types
from ...sql import ast, collection_text


def read_text_form(text: Column, t: ast.Type, message_prefix: str) -> tuple[Column, Column]:
    """(the value of type `t`, the error: `message_prefix` + what is wrong + the text, else NULL)."""
    result = T.StructType([T.StructField("value", types.to_spark(t)), T.StructField("error", T.StringType())])

    def read(value):
        if value is None:
            return None
        try:
            return _spark_value(collection_text.parse(value, t, collection_text.typed_word), t), None
        except ValueError as exc:
            return None, f'{message_prefix}{exc}: "{value}"'

    parsed = F.udf(read, result)(text)
    return parsed["value"], parsed["error"]


def _spark_value(value, t: ast.Type):
    """`collection_text`'s value as a Python UDF hands it to Spark: a record as a tuple of its fields in order."""
    if value is None:
        return None
    if t.name == "STRUCT":
        return tuple(_spark_value(value[name], field_type) for name, field_type in t.fields)
    if t.name == "ARRAY":
        return [_spark_value(v, t.element) for v in value]
    if t.name == "MAP":
        return {k: _spark_value(v, t.value) for k, v in value.items()}
    return value
