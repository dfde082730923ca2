"""AST nodes of Materialize's writable tables: CREATE TABLE with columns, INSERT (rows of
values), UPDATE and DELETE. Frozen dataclasses like those of ast.py (same positions, same
equality rules); the ksql dialect has its own CREATE TABLE and INSERT VALUES (ast.py) and never
builds these.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ast import Expr, Node, Statement, Type

#: The relation a SELECT without FROM reads: one row (statements/tables.py keeps it).
ONE_ROW = "__one_row"


@dataclass(frozen=True)
class TableColumn(Node):
    """`name type` in CREATE TABLE's column list."""

    name: str
    type: Type


@dataclass(frozen=True)
class CreateTable(Statement):
    """CREATE TABLE [IF NOT EXISTS] name (column type, ...): a table the session writes."""

    name: str
    columns: tuple[TableColumn, ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class InsertRows(Statement):
    """INSERT INTO name [(columns)] VALUES (...), (...): rows appended to a writable table."""

    target: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Expr, ...], ...]


@dataclass(frozen=True)
class Assignment(Node):
    """`name = expression` of UPDATE's SET (`name` a column of the table)."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Update(Statement):
    """UPDATE name SET column = expression, ... [WHERE condition]."""

    target: str
    assignments: tuple[Assignment, ...]
    where: Expr | None = None


@dataclass(frozen=True)
class Delete(Statement):
    """DELETE FROM name [WHERE condition]."""

    target: str
    where: Expr | None = None


@dataclass(frozen=True)
class CreateValuesView(Statement):
    """CREATE [OR REPLACE] [MATERIALIZED] VIEW [IF NOT EXISTS] name AS VALUES (...), ...: a
    constant relation, its columns named column1, column2, ... as in PostgreSQL."""

    name: str
    rows: tuple[tuple[Expr, ...], ...]
    materialized: bool = False
    or_replace: bool = False
    if_not_exists: bool = False
