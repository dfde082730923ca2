"""Materialize's writable tables: CREATE TABLE name (column type, ...), INSERT, UPDATE, DELETE.

The table is an upsert changelog in a topic of its own (dialects/writable_tables.py): a row
is a record keyed by its hidden row id, a deletion a tombstone. INSERT writes new ids; UPDATE
and DELETE read the table as it is now (the engine's snapshot of the changelog, with each
row's record key) and write the changed rows under their ids, or tombstones. The records of
one statement share one timestamp: a SUBSCRIBE sees an UPDATE as retractions and insertions
at one mz_timestamp. Only CREATE TABLE (and DROP TABLE) go to the command topic: the rows
are in the table's own topic, which a restart reads again.
"""

from __future__ import annotations

import time
import uuid

from pyspark.sql import functions as F

from .. import types
from ..dialects.writable_tables import (assignable, column_of, mismatch, rows_to_insert, table_def, target,
                                        topic_for)
from ..engine.columns import DROP, RAW_KEY, result_column
from ..errors import StatementError
from ..formats import Field, lookup
from ..kafka import admin
from ..kafka.producer import produce
from ..kafka.reach import ensure_reachable
from ..sql import ast
from ..sql import ast_tables as tables
from ..engine.api import prepare
from ..engine.api import analysed

#: The changelog topic's settings: one partition keeps a table's changes in order; compacted,
#: as a changelog keyed by row id may be.
TOPIC_CONFIG = {"cleanup.policy": "compact"}


def create_table(session, stmt: tables.CreateTable, text, timeout, *, resume: bool = False):
    """A new table starts empty (a topic left under its name is emptied); `resume` (replaying
    the command topic) keeps the rows its topic holds."""
    if stmt.name in session.catalog or stmt.name in session.catalog.types:
        if stmt.if_not_exists:
            return None
        raise StatementError(f"catalog item '{stmt.name}' already exists")
    service = session.settings.get("ksql.service.id") if session.commands is not None else None
    table = table_def(stmt, topic_for(stmt.name, service, uuid.uuid4().hex[:12]), text, session.catalog.types)
    bootstrap = session.bootstrap_servers
    ensure_reachable(bootstrap, session.timeout_of(timeout))
    if not resume and admin.topic_exists(bootstrap, table.topic):
        admin.delete_topic(bootstrap, table.topic, missing_ok=True)
    admin.create_topic(bootstrap, table.topic, 1, config=TOPIC_CONFIG, exist_ok=True)
    session.catalog.add(table)
    return None


def insert_rows(session, stmt: tables.InsertRows, text, timeout):
    table = target(session.catalog, stmt.target)
    rows = rows_to_insert(stmt, table, session.catalog.types)
    write(session, table, [(uuid.uuid4().hex.encode(), row) for row in rows], timeout)
    return None


def update_rows(session, stmt: tables.Update, text, timeout):
    """Every row the WHERE clause selects, with the assigned columns' new values, under its id."""
    table = target(session.catalog, stmt.target)
    assigned = {a.name: a.value for a in stmt.assignments}
    for name in assigned:
        column_of(table, name)
    items = tuple(ast.SelectItem(assigned.get(c.name, ast.ColumnRef(c.name)), c.name) for c in table.columns)
    keys, rows, spark_types = _current(session, table, items, stmt.where, timeout)
    for i, column in enumerate(table.columns):
        found = spark_types[i]
        if column.name in assigned and not assignable(column, found):
            raise StatementError(mismatch(column, found))
    stored = [[_stored(v, c) for v, c in zip(row, table.columns)] for row in rows]
    write(session, table, list(zip(keys, stored)), timeout)
    return None


def delete_rows(session, stmt: tables.Delete, text, timeout):
    """A tombstone for every row the WHERE clause selects."""
    table = target(session.catalog, stmt.target)
    items = tuple(ast.SelectItem(ast.ColumnRef(c.name), c.name) for c in table.columns)
    keys, _, _ = _current(session, table, items, stmt.where, timeout)
    write(session, table, [(key, None) for key in keys], timeout)
    return None


def _current(session, table, items, where, timeout):
    """(row ids, rows, each item's type name or None for NULL) of the table's rows `where`
    selects, as the engine's snapshot reads them."""
    ensure_reachable(session.bootstrap_servers, session.timeout_of(timeout))
    select = ast.Select(items=items, source=ast.SourceRef(table.name), where=where)
    prepared = prepare(session, select)
    frame = prepared.built.frame
    schema = [frame.schema[result_column(i)].dataType for i in range(len(items))]
    found = [None if d.typeName() == "void" else types.from_spark(d).name for d in schema]
    rows = analysed(lambda: frame.where(~F.col(DROP)).select(
        F.col(RAW_KEY), *[F.col(result_column(i)) for i in range(len(items))]).collect())
    return [r[0] for r in rows], [list(r[1:]) for r in rows], found


def _stored(value, column):
    """An UPDATE's value as the column stores it (PostgreSQL's assignment casts of numbers)."""
    if value is None:
        return None
    kind = column.type.name
    if kind in ("INT", "BIGINT") and not isinstance(value, int):
        return int(round(value))
    if kind == "DOUBLE":
        return float(value)
    return value


def write(session, table, changes, timeout) -> None:
    """Produce (row id, row or None) records, in order, with one timestamp."""
    if not changes:
        return
    fields = [Field(c.name, c.type) for c in table.columns]
    json_format = lookup(table.value_format.name)
    now = int(time.time() * 1000)
    records = [{"key": key, "value": None if row is None else json_format.encode(row, fields, table.value_format,
                                                                                  "value"),
                "timestamp": now} for key, row in changes]
    ensure_reachable(session.bootstrap_servers, session.timeout_of(timeout))
    produce(session.bootstrap_servers, table.topic, records, timeout=session.timeout_of(timeout))

