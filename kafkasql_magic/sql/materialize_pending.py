"""Materialize syntax that parses but is not run yet: refused with a clear message rather than
silently ignored (an ORDER BY dropped, a source read from the wrong offset or envelope).

Each entry is a feature name and the AST nodes it shows in. Whoever wires a feature into the
Materialize dialect's engine removes its entry here, in the same commit.
"""

from __future__ import annotations

from typing import Callable

from ..errors import StatementError
from . import ast
from . import ast_materialize as mz_ast

PENDING: dict[str, Callable[[ast.Node], bool]] = {
    "ORDER BY in a function call": lambda n: isinstance(n, mz_ast.OrderedCall),
}


def refuse_pending(statement: ast.Statement) -> ast.Statement:
    """`statement`, or a StatementError naming the first feature in it not run yet, and where."""
    for node in ast.walk(statement):
        for feature, shows_in in PENDING.items():
            if shows_in(node):
                raise StatementError(f"line {node.line}:{node.column}: {feature} is parsed but not run yet "
                                     "by kafkasql_magic's Materialize dialect")
    return statement
