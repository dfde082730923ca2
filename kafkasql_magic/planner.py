"""AST + catalog -> Spark DataFrame.

The planned frame has the result columns (named by position, `_c0` ...) plus bookkeeping
columns: `__ERROR` (why a record failed, NULL when it did not), `__DROP` (the record yields
no row: its bytes did not decode or its WHERE failed) and where it came from. The runtime
collects each micro-batch once and splits it into result rows and processing-log entries,
so a bad record never stops a query nor hides the good ones around it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .catalog import Catalog, SourceDef, ViewDef
from .ddl import RESERVED_COLUMN_NAMES
from .errors import StatementError
from .expressions import Compiler, Scope
from .logical import BOOKKEEPING, DROP, ERROR, PSEUDOCOLUMNS, latest_per_key, logical_frame
from .sql import ast
from .sql.render import render


@dataclass(frozen=True)
class _Named:
    name: str


@dataclass(frozen=True)
class Naming:
    """A dialect's rules for result column names."""

    fold: Callable[[str], str]
    generated: Callable[[int, ast.Expr], str]


#: Dialect -> naming rules (ksqlDB upper-cases and numbers expressions; Materialize
#: lower-cases and names an expression after its function, else ?column?).
NAMING = {
    "ksql": Naming(str.upper, lambda i, e: f"KSQL_COL_{i}"),
    "materialize": Naming(str.lower, lambda i, e: e.name.lower() if isinstance(e, ast.FunctionCall) else "?column?"),
}


@dataclass
class QueryPlan:
    """A planned SELECT: the source, output names and how to turn raw records into rows."""

    statement: ast.Select
    source: SourceDef
    names: list[str]
    key_names: list[str]
    build: Callable[[DataFrame], DataFrame]

    @property
    def push(self) -> bool:
        return self.statement.emit_changes

    @property
    def limit(self) -> int | None:
        return self.statement.limit


def plan_select(stmt: ast.Select, catalog: Catalog, raw_schema_frame: DataFrame, *,
                dialect: str = "ksql") -> QueryPlan:
    """Plan `stmt`; `raw_schema_frame` is any DataFrame with the raw Kafka schema (for typing)."""
    relation = catalog.get(stmt.source.name)
    _check_unsupported(stmt)
    if not stmt.emit_changes and relation.dialect == "ksql" and dialect == "ksql":
        check_pull(stmt)
    if isinstance(relation, ViewDef):
        inner = plan_select(_as_push(relation.query, stmt.emit_changes), catalog, raw_schema_frame, dialect=dialect)
        source, star, frame_of = inner.source, [_Named(n) for n in inner.names], _view_frame(inner)
    else:
        source, star = relation, relation.star_columns
        frame_of = (lambda raw: logical_frame(raw if raw.isStreaming or not source.keyed else latest_per_key(raw),
                                              source))
    outputs = _outputs_of(stmt, star, NAMING[dialect])
    names = [name for name, _ in outputs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise StatementError(f"Duplicate value columns found in schema: `{sorted(duplicates)[0]}`")
    key_names = [n for n, e in outputs if isinstance(e, ast.ColumnRef)
                 and e.name.lower() in {c.name.lower() for c in source.key_columns}]
    qualifiers = {relation.name} | ({stmt.source.alias} if stmt.source.alias else set())
    visible = {c.name for c in star} | (set(PSEUDOCOLUMNS) if isinstance(relation, SourceDef) else set())

    def build(raw: DataFrame) -> DataFrame:
        frame = frame_of(raw)
        scope = Scope(frame, visible, qualifiers)
        where_error = F.lit(None).cast("string")
        if stmt.where is not None:
            where = Compiler(scope)
            keep = where.compile(stmt.where)
            where_error = _computing_error(where, stmt.where, "WHERE", None)
            frame = frame.where(F.col(ERROR).isNotNull() | where_error.isNotNull() | keep)
            frame = frame.withColumn("__WHERE_ERROR", where_error)
            where_error = F.col("__WHERE_ERROR")
        drop = F.col(DROP) | where_error.isNotNull()
        values, errors = [], [F.col(ERROR), where_error]
        for index, (name, expr) in enumerate(outputs):
            compiler = Compiler(scope)
            value = compiler.compile(expr)
            if compiler.failures:
                errors.append(_computing_error(compiler, expr, name, index))
                value = F.when(compiler.error().isNull(), value)
            values.append(value.alias(f"_c{index}"))
        meta = [F.coalesce(*errors).alias(ERROR), drop.alias(DROP)] + [F.col(c) for c in BOOKKEEPING[2:]]
        return frame.select(*values, *meta)

    build(raw_schema_frame)  # analyse now, so bad SQL fails before any query starts
    return QueryPlan(stmt, source, names, key_names, build)


def _as_push(query: ast.Select, push: bool) -> ast.Select:
    return replace(query, emit_changes=push, limit=None)


def _view_frame(inner: QueryPlan) -> Callable[[DataFrame], DataFrame]:
    """A view's planned rows, named by its columns, as the frame an outer query reads."""
    def frame(raw: DataFrame) -> DataFrame:
        planned = inner.build(raw)
        return planned.select(*[F.col(f"_c{i}").alias(n) for i, n in enumerate(inner.names)],
                              *[F.col(c) for c in BOOKKEEPING])
    return frame


def _computing_error(compiler: Compiler, expr, name: str, index: int | None) -> Column:
    """ksqlDB's wording: Error computing expression <expr> for column <COL> with index <n>: ..."""
    where = f" for column {name} with index {index}" if index is not None else " in WHERE"
    return F.when(compiler.error().isNotNull(),
                  F.concat(F.lit(f"Error computing expression {render(expr)}{where}: "), compiler.error()))


#: Pseudocolumns a pull query cannot use (KLIP-50): they are not kept in table state.
PULL_UNSUPPORTED = ("ROWPARTITION", "ROWOFFSET")


def _pseudocolumns_in(exprs, names) -> list[str]:
    found = {n.name for e in exprs for n in ast.walk(e) if isinstance(n, ast.ColumnRef) and n.name in names}
    return sorted(found, key=list(names).index)


def check_pull(stmt: ast.Select) -> None:
    clauses = (("SELECT", [i.expr for i in stmt.items if isinstance(i, ast.SelectItem)]),
               ("WHERE", [stmt.where] if stmt.where is not None else []))
    for clause, exprs in clauses:
        found = _pseudocolumns_in(exprs, PULL_UNSUPPORTED)
        if found:
            raise StatementError(
                f"Pull queries don't support the following columns in {clause} clauses: {', '.join(found)}")


def check_persistent(stmt: ast.Select) -> None:
    """A persistent query's output is a new source: pseudocolumns there need an alias."""
    for item in stmt.items:
        if isinstance(item, ast.SelectItem) and item.alias is None and isinstance(item.expr, ast.ColumnRef) \
                and item.expr.name in PSEUDOCOLUMNS:
            raise StatementError(
                f"Reserved column name in select: `{item.expr.name}`. Please remove or alias the column.")


def _check_unsupported(stmt: ast.Select) -> None:
    for clause, present in (("GROUP BY", stmt.group_by), ("HAVING", stmt.having),
                            ("PARTITION BY", stmt.partition_by)):
        if present:
            raise StatementError(f"{clause} is not supported yet by kafkasql_magic.")


def _outputs_of(stmt: ast.Select, star_columns, naming: Naming = NAMING["ksql"]) -> list[tuple[str, ast.Expr]]:
    """(output name, expression) per result column, with the dialect's naming rules."""
    outputs: list[tuple[str, ast.Expr]] = []
    generated = 0
    for item in stmt.items:
        if isinstance(item, ast.Star):
            outputs += [(naming.fold(c.name), ast.ColumnRef(c.name)) for c in star_columns]
            continue
        if item.alias is not None:
            if item.alias.upper() in RESERVED_COLUMN_NAMES:
                raise StatementError(
                    f"`{item.alias.upper()}` is a reserved column name. You cannot use it as an alias for a column."
                )
            outputs.append((item.alias, item.expr))
        elif isinstance(item.expr, ast.ColumnRef):
            outputs.append((naming.fold(item.expr.name), item.expr))
        elif isinstance(item.expr, ast.Dereference):
            outputs.append((naming.fold(item.expr.field), item.expr))
        else:
            outputs.append((naming.generated(generated, item.expr), item.expr))
            generated += 1
    return outputs


def select_over_frame(stmt: ast.Select, frame: DataFrame, qualifier: str) -> tuple[list[str], DataFrame]:
    """A SELECT over an in-memory frame whose columns are already ksql columns (the processing
    log): the same expressions and naming, none of the Kafka decoding."""
    columns = [_Named(name) for name in frame.columns]
    outputs = _outputs_of(stmt, columns)
    scope = Scope(frame, set(frame.columns), {qualifier})
    if stmt.where is not None:
        frame = frame.where(Compiler(scope).compile(stmt.where))
    result = frame.select(*[Compiler(scope).compile(e).alias(f"_c{i}") for i, (_, e) in enumerate(outputs)])
    if stmt.limit is not None:
        result = result.limit(stmt.limit)
    return [name for name, _ in outputs], result
