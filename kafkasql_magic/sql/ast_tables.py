"""AST nodes of Materialize's writable tables: CREATE TABLE with columns, INSERT (rows of
values), UPDATE and DELETE. Frozen dataclasses like those of ast.py (same positions, same
equality rules); the ksql dialect has its own CREATE TABLE and INSERT VALUES (ast.py) and never
builds these.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ast import Expr, Node, Statement, Type


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
