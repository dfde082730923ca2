"""A dialect's naming rules: how result columns are named and when two column names clash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import StatementError
from ..sql import ast


@dataclass(frozen=True)
class Naming:
    fold: Callable[[str], str]  # an unquoted column reference -> its result name
    generated: Callable[[int, ast.Expr], str]  # the n-th unnamed expression -> its result name
    clash_key: Callable[[str], str]  # two column names clash when their keys are equal
    duplicate: Callable[[str, str], str]  # (column, hint) -> the message refusing a repeated name

    def check_unique(self, names: Iterable[str], hint: str = "") -> None:
        """Refuse the first name that clashes with an earlier one."""
        seen: set[str] = set()
        for name in names:
            if self.clash_key(name) in seen:
                raise StatementError(self.duplicate(name, hint))
            seen.add(self.clash_key(name))


#: ksqlDB upper-cases names and numbers unnamed expressions; names are exact (`a` <> `A`).
KSQL = Naming(fold=str.upper, generated=lambda i, e: f"KSQL_COL_{i}", clash_key=lambda n: n,
              duplicate=lambda n, hint: f"Duplicate column names: {n}")

def _postgres_name(e: ast.Expr) -> str:
    """PostgreSQL's name for an unnamed expression: a cast keeps its operand's name, a column
    its own, a call its function's; anything else is ?column?."""
    while isinstance(e, ast.Cast):
        e = e.operand
    if isinstance(e, ast.ColumnRef):
        return e.name.lower()
    if isinstance(e, ast.Dereference):
        return e.field.lower()
    return e.name.lower() if isinstance(e, ast.FunctionCall) else "?column?"


#: Materialize lower-cases names, names an expression as PostgreSQL does and compares column
#: names case-insensitively.
MATERIALIZE = Naming(
    fold=str.lower,
    generated=lambda i, e: _postgres_name(e),
    clash_key=str.lower,
    duplicate=lambda n, hint: f'column "{n}" specified more than once{hint}')
