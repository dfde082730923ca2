"""A dialect's naming rules: how result columns are named and when two column names clash."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import StatementError
from ..sql import ast, ast_materialize


@dataclass(frozen=True)
class Naming:
    fold: Callable[[str], str]  # another dialect's column name -> its result name here
    own: Callable[[str], str]  # a name written in this dialect (a column reference) -> its result name
    #: the source columns' names -> a namer of unnamed expressions (`.name_for(expr)`), one per statement
    aliases: Callable[[Iterable[str]], "Aliases"]
    clash_key: Callable[[str], str]  # two column names clash when their keys are equal
    duplicate: Callable[[str, str], str]  # (column, hint) -> the message refusing a repeated name

    def check_unique(self, names: Iterable[str], hint: str = "") -> None:
        """Refuse the first name that clashes with an earlier one."""
        seen: set[str] = set()
        for name in names:
            if self.clash_key(name) in seen:
                raise StatementError(self.duplicate(name, hint))
            seen.add(self.clash_key(name))


#: A name ending in `_<number>` split into its stem and number (`KSQL_COL_3`, `F_1`; `F` is F_0).
_NUMBERED = re.compile(r"(?P<stem>.*?)(?:_(?P<number>\d+))?")

#: The stem of ksqlDB's generated names; unlike a field's name it always carries its number.
GENERATED = "KSQL_COL"


class KsqlAliases:
    """ksqlDB's names for unnamed expressions: `KSQL_COL_n` for an expression, the field's name
    for a struct field (`s->f` -> `F`, then `F_1`, ...), each numbered past the numbers the
    source columns already use under that stem (a source column `KSQL_COL_0` makes the first
    generated name `KSQL_COL_1`; a column `F` makes a field `f` `F_1`)."""

    def __init__(self, used: Iterable[str]):
        self._used: dict[str, set[int]] = {}
        for name in used:
            match = _NUMBERED.fullmatch(name)
            self._used.setdefault(match["stem"], set()).add(int(match["number"] or 0))
        self._next: dict[str, int] = {}

    def _next_name(self, stem: str) -> str:
        used, index = self._used.get(stem, set()), self._next.get(stem, 0)
        while index in used:
            index += 1
        self._next[stem] = index + 1
        return stem if index == 0 and stem != GENERATED else f"{stem}_{index}"

    def name_for(self, expr: ast.Expr) -> str:
        if isinstance(expr, ast.Dereference):
            return self._next_name(_NUMBERED.fullmatch(expr.field)["stem"])  # as written: `"f"` stays f
        return self._next_name(GENERATED)


#: ksqlDB upper-cases names and numbers unnamed expressions; names are exact (`a` <> `A`).
def _ksql_fold(name: str) -> str:
    """A Materialize source's all-lower-case column is upper-cased, as ksqlDB names results;
    a name with capitals is kept as written."""
    return name if name != name.lower() else name.upper()


def _as_written(name: str) -> str:
    """The ksql parser upper-cases unquoted names already and keeps quoted ones (`"foo"`
    stays `foo`, as in ksqlDB)."""
    return name


KSQL = Naming(fold=_ksql_fold, own=_as_written, aliases=KsqlAliases, clash_key=lambda n: n,
              duplicate=lambda n, hint: f"Duplicate column names: {n}")

def _postgres_name(e: ast.Expr) -> str:
    """PostgreSQL's name for an unnamed expression: a cast keeps its operand's name, a column
    its own, a call its function's; anything else is ?column?."""
    while isinstance(e, ast.Cast):
        e = e.operand
    e = getattr(e, "call", e)  # list_agg(x ORDER BY k) is named after its function too
    if isinstance(e, ast.ColumnRef):
        return e.name.lower()
    if isinstance(e, ast.Dereference):
        return e.field.lower()
    if isinstance(e, ast_materialize.MapLiteral):
        return "map"
    return e.name.lower() if isinstance(e, ast.FunctionCall) else "?column?"


class PostgresAliases:
    """PostgreSQL names every unnamed expression on its own (no numbering)."""

    def __init__(self, used: Iterable[str] = ()):
        pass

    @staticmethod
    def name_for(expr: ast.Expr) -> str:
        return _postgres_name(expr)


Aliases = KsqlAliases | PostgresAliases


#: Materialize lower-cases names, names an expression as PostgreSQL does and compares column
#: names case-insensitively.
MATERIALIZE = Naming(
    fold=str.lower,
    own=str.lower,
    aliases=PostgresAliases,
    clash_key=str.lower,
    duplicate=lambda n, hint: f'column "{n}" specified more than once{hint}')
