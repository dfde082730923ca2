"""Seek, don't scan: what a WHERE clause says about where to read.

Conjuncts that pin ROWPARTITION to constants, bound ROWOFFSET, or bound ROWTIME from below
narrow the partitions and offsets the source reads. The WHERE clause still filters every row
exactly; the bounds only spare reading what it would drop. Anything else (OR, functions of
the pseudocolumns) simply does not narrow the read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...sql import ast
from ..columns import PSEUDOCOLUMNS, ROWOFFSET, ROWPARTITION, ROWTIME

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


@dataclass(frozen=True)
class Seek:
    """Partitions to read (None: all), offsets [offset_from, offset_to) and a ROWTIME floor."""

    partitions: frozenset[int] | None = None
    offset_from: int | None = None
    offset_to: int | None = None
    rowtime_from: int | None = None

    @property
    def narrows(self) -> bool:
        return self != Seek()

    @property
    def empty(self) -> bool:
        return (self.partitions is not None and not self.partitions) or (
            self.offset_from is not None and self.offset_to is not None and self.offset_from >= self.offset_to)

    def describe(self) -> str:
        parts = "all partitions" if self.partitions is None else \
            "partitions " + ", ".join(str(p) for p in sorted(self.partitions))
        lo = "the start" if self.offset_from is None else f"offset {self.offset_from}"
        hi = "no end (follows new records)" if self.offset_to is None else f"offset {self.offset_to - 1} inclusive"
        text = f"{parts}, from {lo} to {hi}"
        if self.rowtime_from is not None:
            text += f", starting at the first record with ROWTIME >= {self.rowtime_from}"
        return text


def conjuncts(e: ast.Expr | None) -> list[ast.Expr]:
    if e is None:
        return []
    if isinstance(e, ast.And):
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]


def _pseudo(e: ast.Expr) -> str | None:
    if isinstance(e, ast.ColumnRef) and e.name in PSEUDOCOLUMNS:
        return e.name
    return None


def _int(e: ast.Expr) -> int | None:
    if isinstance(e, ast.Literal) and e.kind in ("INT", "BIGINT"):
        return int(e.value)
    return None


def _constraints(e: ast.Expr) -> list[tuple[str, str, tuple[int, ...]]]:
    """(pseudocolumn, op, values) constraints in one conjunct."""
    if isinstance(e, ast.BinaryOp) and e.op in _FLIP:
        if _pseudo(e.left) and _int(e.right) is not None:
            return [(_pseudo(e.left), e.op, (_int(e.right),))]
        if _pseudo(e.right) and _int(e.left) is not None:
            return [(_pseudo(e.right), _FLIP[e.op], (_int(e.left),))]
    if isinstance(e, ast.Between) and not e.negated and _pseudo(e.operand):
        low, high = _int(e.low), _int(e.high)
        if low is not None and high is not None:
            return [(_pseudo(e.operand), ">=", (low,)), (_pseudo(e.operand), "<=", (high,))]
    if isinstance(e, ast.InList) and not e.negated and _pseudo(e.operand):
        values = [_int(i) for i in e.items]
        if values and None not in values:
            return [(_pseudo(e.operand), "IN", tuple(values))]
    return []


def _range(op: str, values: tuple[int, ...]) -> tuple[int | None, int | None]:
    """[low, high) implied by one constraint."""
    if op == "=":
        return values[0], values[0] + 1
    if op == "IN":
        return min(values), max(values) + 1
    v = values[0]
    return {"<": (None, v), "<=": (None, v + 1), ">": (v + 1, None), ">=": (v, None)}[op]


def _tighter(current, new, pick):
    return new if current is None else (current if new is None else pick(current, new))


def seek_of(where: ast.Expr | None) -> Seek:
    partitions = None
    lo = hi = rowtime = None
    for conjunct in conjuncts(where):
        for column, op, values in _constraints(conjunct):
            if column == ROWPARTITION:
                if op in ("=", "IN"):
                    pinned = frozenset(values)
                    partitions = pinned if partitions is None else partitions & pinned
            elif column == ROWOFFSET:
                low, high = _range(op, values)
                lo, hi = _tighter(lo, low, max), _tighter(hi, high, min)
            elif column == ROWTIME and op in (">", ">=", "="):
                floor = values[0] + (1 if op == ">" else 0)
                rowtime = _tighter(rowtime, floor, max)
    return Seek(partitions, lo, hi, rowtime)
