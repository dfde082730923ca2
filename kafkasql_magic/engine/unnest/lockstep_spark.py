"""A SELECT list's unnest calls on Spark: one generator for them all (Spark runs two in one
SELECT as a cross product and none inside an expression), each call's elements then a column the
SELECT's expressions name (`calls.with_elements`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...sql import ast
from ..expressions.compile_spark import Compiler
from .calls import ELEMENT

#: the generated column: each row an element of every list, in lockstep (`lockstep`)
LOCKSTEP = "__lockstep"
#: why a record's unnested list could not be computed (its row then carries NULLs and this error)
UNNEST_ERROR = "__unnest_error"


@dataclass
class ElementScope:
    """A scope that also names the elements' columns (`calls.ELEMENT`), over the exploded frame."""

    inner: object
    frame: DataFrame
    elements: frozenset[str]

    def column(self, ref: ast.ColumnRef) -> Column:
        if ref.qualifier is None and ref.name in self.elements:
            return F.col(ref.name)
        return self.inner.column(ref)

    def type_of(self, col: Column):
        return self.frame.select(col).schema.fields[0].dataType

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def lockstep(lists: Sequence[Column], failed: Column | None = None) -> Column:
    """The unnest(...)s of one SELECT list, as PostgreSQL (and Materialize) runs them: side by
    side, element i of each list in row i, the shorter lists padded with NULLs (an empty or NULL
    list counts as empty), not every combination. An array of structs `e0, e1, ...`, exploded
    once: Spark runs two generators in one SELECT as a cross product, and takes none inside an
    expression. Where `failed` (a list that could not be computed) is set, one row of NULLs, so
    that the record's error is logged rather than the record silently giving no row."""
    longest = F.greatest(*[F.coalesce(F.size(values), F.lit(0)) for values in lists], F.lit(0))
    if failed is not None:
        longest = F.when(failed, F.lit(1)).otherwise(longest)
    rows = F.transform(F.sequence(F.lit(1), F.greatest(longest, F.lit(1))), lambda i: F.struct(
        *[F.try_element_at(values, i).alias(f"e{k}") for k, values in enumerate(lists)]))
    return F.when(longest > 0, rows)


def unnested(frame: DataFrame, scope, calls, outputs, computing_error) -> tuple[DataFrame, ElementScope, Column | None]:
    """`frame` with a row per element index of its lists and a column per call's elements, the
    scope that names them, and the error of a record whose list failed (else None).
    `computing_error(compiler, expr, name, index)` words a failure as any column's."""
    lists, failures = [], []
    for call, index in calls:
        name, expr = outputs[index]
        Compiler(scope).compile(call)  # the call checked as any function's (unnest(1): Materialize's message)
        compiler = Compiler(scope)
        lists.append(compiler.compile(call.args[0]))
        if compiler.failures:
            failures.append(computing_error(compiler, expr, name, index))
    if failures:
        frame = frame.withColumn(UNNEST_ERROR, F.coalesce(*failures))
    failed = F.col(UNNEST_ERROR).isNotNull() if failures else None
    frame = frame.withColumn(LOCKSTEP, F.explode(lockstep(lists, failed)))
    elements = [ELEMENT.format(k) for k in range(len(calls))]
    frame = frame.withColumns({e: F.col(LOCKSTEP)[f"e{k}"] for k, e in enumerate(elements)})
    return frame, ElementScope(scope, frame, frozenset(elements)), F.col(UNNEST_ERROR) if failures else None
