"""Materialize's jsonb operators over JSON text (jsonb is JSON text here): `doc -> key` gives a
member or array element as JSON text (a string stays quoted), `doc ->> key` the same as text
(a string unquoted, JSON null as NULL); `doc #> '{a,0}'` and `doc #>> ...` the same at a path. A missing member, an index past the end, a key of
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
    return _shown(_member(doc, key, by_index), as_text)


def jsonb_path(doc: Column, steps: tuple[str | None, ...], *, as_text: bool) -> Column:
    """`doc #> path` (`as_text` False) or `doc #>> path` (True) over JSON text: each step names
    an object's member or, written as an integer, an array's element (0-based, negative from
    the end), which the value met at that step decides, as in PostgreSQL; the empty path is
    the document itself; a NULL step, a missing step or a step into a scalar gives NULL."""
    if any(step is None for step in steps):
        return F.lit(None).cast("string")
    member = F.try_parse_json(doc)
    for step in steps:
        found = F.try_element_at(F.try_variant_get(member, "$", "map<string,variant>"), F.lit(step))
        index = _integer(step)
        if index is not None:
            elements = F.try_variant_get(member, "$", "array<variant>")
            found = F.coalesce(found, F.try_element_at(elements, F.lit(index + 1 if index >= 0 else index)))
        member = found
    return _shown(member, as_text)


def _integer(step: str) -> int | None:
    try:
        return int(step.strip())
    except ValueError:
        return None


def _shown(member: Column, as_text: bool) -> Column:
    """A variant member as jsonb (JSON text) or, `as_text`, as text (a string unquoted)."""
    if not as_text:
        return F.to_json(member)
    is_string = F.schema_of_variant(member) == F.lit("STRING")
    return (F.when(member.isNull() | F.is_variant_null(member), F.lit(None).cast("string"))
            .when(is_string, F.variant_get(member, "$", "string"))
            .otherwise(F.to_json(member)))
