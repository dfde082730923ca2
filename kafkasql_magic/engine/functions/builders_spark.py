"""What every function builder is: it gets the compile context, the compiled argument columns
and their AST (to read literal options such as a byte order at plan time). A function that can
fail on a record registers an error condition with `ctx.fail(condition, message)`; the build
turns those into NULL results and processing-log entries instead of a failed query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from pyspark.sql import Column

from ...errors import StatementError
from ...sql import ast


class Context(Protocol):
    def fail(self, condition: Column, message: Column) -> None: ...


Builder = Callable[[Context, list[Column], Sequence[ast.Expr]], Column]


@dataclass(frozen=True)
class Function:
    build: Builder
    min_args: int
    max_args: int | None  # None: variadic


def simple(fn: Callable[..., Column]) -> Builder:
    """A builder that only needs the argument columns."""
    return lambda ctx, args, exprs: fn(*args)


def literal_text(expr: ast.Expr) -> str | None:
    """The text of a string literal argument, else None."""
    return expr.value if isinstance(expr, ast.Literal) and isinstance(expr.value, str) else None


def text_option(expr: ast.Expr, what: str) -> str:
    """A string literal option (an encoding, a pattern, a unit): refused when it is anything else."""
    if not isinstance(expr, ast.Literal) or not isinstance(expr.value, str):
        raise StatementError(f"{what} must be a string literal.")
    return expr.value


def literal_option(expr: ast.Expr, what: str):
    """A literal option of any type that is not NULL."""
    if not isinstance(expr, ast.Literal) or expr.value is None:
        raise StatementError(f"{what} must be a literal.")
    return expr.value
