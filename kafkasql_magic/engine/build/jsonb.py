"""Materialize's jsonb operators over JSON text (jsonb is JSON text here): `doc -> key` gives a
member or array element as JSON text (a string stays quoted), `doc ->> key` the same as text
(a string unquoted, JSON null as NULL). A missing member, an index past the end, a key of
the wrong kind for the document (a name on an array, an index on an object) and text that is
not JSON all give NULL, as in PostgreSQL. Spark's variant keeps each member's JSON type, which
`get_json_object` loses (it unquotes strings)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def _member(doc: Column, key: Column, by_index: bool) -> Column:
    """The member (variant) under `key`: a name in an object, or a 0-based index into an
    array counting from the end when negative; NULL when there is none."""
    if by_index:
        elements = F.from_json(doc, "array<variant>")
        return F.try_element_at(elements, F.when(key >= 0, key + 1).otherwise(key))
    return F.try_element_at(F.from_json(doc, "map<string,variant>"), key)


def jsonb_get(doc: Column, key: Column, *, by_index: bool, as_text: bool) -> Column:
    """`doc -> key` (`as_text` False) or `doc ->> key` (True) over JSON text."""
    member = _member(doc, key, by_index)
    if not as_text:
        return F.to_json(member)
    is_string = F.schema_of_variant(member) == F.lit("STRING")
    return (F.when(member.isNull() | F.is_variant_null(member), F.lit(None).cast("string"))
            .when(is_string, F.variant_get(member, "$", "string"))
            .otherwise(F.to_json(member)))
