"""Materialize's COMMENT ON: a comment on a relation, one of its columns, a sink, a type (or one
of a record type's fields), a connection or a secret, held by the catalog (`Catalog.comments`).
SHOW COLUMNS, SHOW TABLES, SHOW TYPES, SHOW CONNECTIONS and SHOW SECRETS show them, and a sink's
Avro schemas take its relation's comments as docs (`sink_docs`: Materialize's purification turns
them into DOC ON options, under the ones the statement gives). Pure: no Spark."""

from __future__ import annotations

from ..errors import StatementError
from ..sql import ast
from .materialize_sinks import qualified

#: The object kinds a COMMENT ON may name for a kind of our catalog's: a view may be called a
#: materialized view (every view here is computed on demand and kept by the queries reading it).
NAMED_AS = {"view": ("view", "materialized view")}


class Comments:
    """Comment texts by (object name, column or field name, None for the object itself)."""

    def __init__(self):
        self._texts: dict[tuple[str, str | None], str] = {}

    def set(self, name: str, part: str | None, text: str | None) -> None:
        if text is None:
            self._texts.pop((name, part), None)
        else:
            self._texts[(name, part)] = text

    def of(self, name: str, part: str | None = None) -> str | None:
        return self._texts.get((name, part))

    def parts(self, name: str) -> dict[str, str]:
        """The comments on `name`'s columns (or fields), by column."""
        return {part: text for (owner, part), text in self._texts.items() if owner == name and part is not None}

    def drop(self, name: str) -> None:
        """An object dropped takes its comments with it."""
        for key in [k for k in self._texts if k[0] == name]:
            del self._texts[key]


def check_target(kind: str, name: str, found: str | None, parts: list[str] | None, part: str | None) -> None:
    """COMMENT ON `kind` `name` [. `part`]: the object must exist (`found` is its kind, None when
    there is none), be of that kind (a column's owner: a relation or a record type), and have the
    column (`parts`: its columns or fields) - Materialize's messages."""
    if found is None:
        raise StatementError(f"unknown catalog item '{name}'")
    if kind == "column":
        if parts is None:
            raise StatementError(f"{qualified(name)} is a {found}, which has no columns")
        if part not in parts:
            raise StatementError(f'column "{name}.{part}" does not exist')
    elif kind not in NAMED_AS.get(found, (found,)):
        raise StatementError(f"{qualified(name)} is a {found} not a {kind}")


def sink_docs(relation: str, comments: Comments) -> tuple[ast.AvroDoc, ...]:
    """A sink's DOC ON options from the comments on its relation and the relation's columns:
    shared by the key and the value schema, under the statement's own (`_avro_shape` lets a
    later doc of the same place win)."""
    docs = [ast.AvroDoc("", "TYPE", (relation,), text) for text in [comments.of(relation)] if text is not None]
    docs += [ast.AvroDoc("", "COLUMN", (relation, column), text)
             for column, text in sorted(comments.parts(relation).items())]
    return tuple(docs)


def with_comment_docs(stmt, comments: Comments):
    """`stmt` (a CREATE SINK) with the comments on its relation as DOC ON options of each Avro
    format that registers its schemas, before the statement's own, as Materialize purifies it."""
    from dataclasses import replace

    docs = sink_docs(stmt.relation, comments)
    if not docs:
        return stmt

    def documented(fmt):
        if fmt is None or fmt.name != "AVRO" or not (fmt.registry_url or fmt.registry_connection):
            return fmt
        options = fmt.avro_options or ast.AvroSchemaOptions()
        return replace(fmt, avro_options=replace(options, docs=docs + options.docs))

    return replace(stmt, format=documented(stmt.format), key_format=documented(stmt.key_format),
                   value_format=documented(stmt.value_format))
