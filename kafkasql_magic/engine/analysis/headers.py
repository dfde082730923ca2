"""Which of a record's headers a read must carry: the reader builds only those.

Converting headers is the reader's costliest per-record step and every header entry is one
more value Spark takes in, so a read asks for the least its query needs: nothing when the
query uses no header column, the last header of each key when only HEADER('k') columns are
used, all of them for a used HEADERS column or when a persistent query forwards the input
record's headers to its output. A header column whose decoding can fail a record (a text
HEADER, or a dialect that requires INCLUDEd headers to be present) is always read: whether a
record is good must not depend on which columns a query selects.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass

from ... import dialects
from ...catalog import HEADER, HEADERS, SourceDef
from ...sql import ast


@dataclass(frozen=True)
class HeaderUse:
    needed: bool
    keys: tuple[str, ...] | None = None  # only these keys' last headers; None: every header


def header_use(source: SourceDef, *, forwarded: bool = False, used: frozenset[str] | None = None) -> HeaderUse:
    """What a read of `source` needs of each record's headers (`forwarded`: all of them);
    `used`: the column names (case-folded) the query refers to, None when not known (all)."""
    def wanted(c) -> bool:
        return used is None or c.name.casefold() in used or _can_fail(source, c)

    if forwarded or any(wanted(c) for c in source.with_role(HEADERS)):
        return HeaderUse(True)
    keys = tuple(dict.fromkeys(c.header_key for c in source.with_role(HEADER) if wanted(c)))
    return HeaderUse(bool(keys), keys if keys else None)


def _can_fail(source: SourceDef, column) -> bool:
    return column.role == HEADER and (column.type.name == "STRING"
                                      or dialects.get(source.dialect).requires_included_headers)


def used_columns(plan) -> frozenset[str]:
    """Every column name (case-folded) a plan refers to, through its views: a name any input
    has counts for all of them (a safe over-estimate, never an omission)."""
    names: set[str] = set()
    _collect(plan.statement, names)
    for _, expr in plan.outputs:  # `*` expanded
        _collect(expr, names)
    for i in plan.inputs:
        if i.view is not None:
            names |= used_columns(i.view)
    return frozenset(names)


def _collect(node, names: set[str]) -> None:
    if isinstance(node, ast.ColumnRef):
        names.add(node.name.casefold())
    elif isinstance(node, (tuple, list)):
        for item in node:
            _collect(item, names)
    elif is_dataclass(node) and not isinstance(node, type):
        for f in fields(node):
            _collect(getattr(node, f.name), names)
