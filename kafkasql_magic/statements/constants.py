"""Materialize's constant relations: `CREATE VIEW v AS VALUES (...), ...` and `SELECT` without
FROM. Each is kept as a writable table's changelog (statements/tables.py), written once: a
VALUES view is a view over a hidden table of its rows (`__values_<view>`), and a SELECT
without FROM reads the one-row table `__one_row`, made when a statement first needs it. So
snapshots, SUBSCRIBE and sinks read them as any table (a sink writes their rows once), and a
restart finds them in their topics.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from ..catalog import Column, ViewDef
from ..dialects.writable_tables import CONSTANT, constant, values_columns
from ..kafka.offsets import watermarks
from ..sql import ast
from ..sql.ast_materialize import base_relation
from ..sql.ast_tables import ONE_ROW, CreateTable, CreateValuesView, TableColumn
from .tables import create_table, write

#: The one-row table's column (no query sees it: `SELECT *` needs a FROM).
ONE_ROW_COLUMN = "one_row"


def hidden_name(view: str) -> str:
    return f"__values_{view}"


def create_values_view(session, stmt: CreateValuesView, text, timeout, *, resume: bool = False):
    """The view over a hidden table of the rows (kept as they are when `resume`: a replay)."""
    if stmt.if_not_exists and stmt.name in session.catalog:
        return None
    columns = values_columns(stmt.rows)
    rows = [[constant(v, Column(n, t)) for v, (n, t) in zip(row, columns)] for row in stmt.rows]
    if stmt.or_replace and not resume:
        dropped(session, stmt.name)
    hidden = hidden_name(stmt.name)
    _constant_table(session, hidden, columns, rows, resume=resume, timeout=timeout)
    query = ast.Select(items=tuple(ast.SelectItem(ast.ColumnRef(n), n) for n, _ in columns),
                       source=ast.SourceRef(hidden))
    view = ViewDef(stmt.name, query, statement=text, dialect="materialize")
    session.catalog.add(view, or_replace=stmt.or_replace, if_not_exists=stmt.if_not_exists)
    return None


def dropped(session, view: str) -> None:
    """After DROP VIEW (or before OR REPLACE): the hidden table of a VALUES view goes too."""
    from ..kafka import admin

    hidden = hidden_name(view)
    if hidden in session.catalog:
        table = session.catalog.drop("TABLE", hidden)
        admin.delete_topic(session.bootstrap_servers, table.topic, missing_ok=True)


def reading(handler):
    """`handler` (SELECT, SUBSCRIBE, CREATE VIEW) with the one-row table made first when the
    statement has a SELECT without FROM."""
    def run(session, stmt, text, timeout, **options):
        query = stmt.query if isinstance(stmt, (ast.CreateView, ast.Subscribe)) else stmt
        if query is not None and ONE_ROW in (base_relation(query.source),
                                             *(base_relation(j.source) for j in query.joins)):
            if ONE_ROW not in session.catalog:
                _constant_table(session, ONE_ROW, [(ONE_ROW_COLUMN, ast.Type("BOOLEAN"))], [[True]], resume=True,
                                timeout=timeout)
        return handler(session, stmt, text, timeout, **options)
    run.__doc__ = handler.__doc__
    return run


def _constant_table(session, name, columns, rows, *, resume: bool, timeout) -> None:
    """The hidden table `name` holding `rows`; with `resume`, a topic that holds rows keeps them."""
    create_table(session, CreateTable(name, tuple(TableColumn(n, t) for n, t in columns)), "", timeout,
                 resume=resume)
    table = replace(session.catalog.get(name), properties={**session.catalog.get(name).properties, CONSTANT: True})
    session.catalog.add(table, or_replace=True)
    marks = watermarks(session.bootstrap_servers, table.topic)
    if not any(high for _, high in marks.values()):
        write(session, table, [(uuid.uuid4().hex.encode(), row) for row in rows], timeout)

