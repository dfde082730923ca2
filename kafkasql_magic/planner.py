"""AST + catalog -> Spark DataFrame.

The planned frame has the result columns (named by position, `_c0` ...) plus bookkeeping
columns: `__ERROR` (why a record failed, NULL when it did not), `__DROP` (the record yields
no row: its bytes did not decode or its WHERE failed) and where it came from. The runtime
collects each micro-batch once and splits it into result rows and processing-log entries,
so a bad record never stops a query nor hides the good ones around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Callable

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from .aggregates import is_aggregate, lookup as lookup_aggregate
from .catalog import Catalog, SourceDef, ViewDef
from .ddl import RESERVED_COLUMN_NAMES
from .errors import StatementError
from .expressions import Compiler, JoinScope, Scope, quoted
from .logical import (BOOKKEEPING, DROP, ERROR, OFFSET, PARTITION, PSEUDOCOLUMNS, RAW_HEADERS, RAW_KEY,
                      RAW_TIMESTAMP, RAW_VALUE, TOPIC, latest_per_key, logical_frame)
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
    """A planned SELECT: the source, output names and how to turn raw records into rows.

    `kind` is TABLE when the rows are a changelog keyed by `key_names` (a table, or an
    aggregation), else STREAM. Records that fail before an aggregation or a join are not in
    the planned rows: `observed` names the metrics that carry them (per micro-batch in a
    push query's progress, in `observations` after a bounded run).

    Spark reads a static DataFrame's Python source once per DataFrame, so a table joined to a
    stream would stay as it was when the query started. A push query whose joins are all
    stream-table joins is therefore `per_batch`: the stream is read raw and `build` runs on
    every micro-batch, reading each table afresh (as ksqlDB joins each record with the table
    as it is then). Joins followed by GROUP BY read the tables once, at the start."""

    statement: ast.Select
    source: SourceDef
    names: list[str]
    key_names: list[str]
    build: Callable[[DataFrame], DataFrame]
    kind: str = "STREAM"
    aggregating: bool = False
    per_batch: bool = False  # a push query's stream-table joins: build() runs on each raw micro-batch
    observed: dict[str, str] = field(default_factory=dict)  # metric name -> the source it reads
    observations: dict[str, Observation] = field(default_factory=dict)
    error_frames: dict[str, DataFrame] = field(default_factory=dict)  # per_batch: the failed records

    @property
    def push(self) -> bool:
        return self.statement.emit_changes

    @property
    def limit(self) -> int | None:
        return self.statement.limit

    @property
    def output_mode(self) -> str:
        return "update" if self.aggregating else "append"


RawFor = Callable[[SourceDef, bool], DataFrame]


@dataclass
class _Input:
    """One FROM item: the relation, the Kafka source under it and how to read its rows."""

    ref: ast.SourceRef
    relation: SourceDef | ViewDef
    source: SourceDef
    kind: str
    columns: list
    frame_of: Callable[[DataFrame], DataFrame]

    @property
    def qualifiers(self) -> tuple[str, ...]:
        """The alias (shown in messages) or name, then the relation's name."""
        return ((self.ref.alias,) if self.ref.alias else ()) + (self.relation.name,)

    @property
    def visible(self) -> list[str]:
        pseudo = list(PSEUDOCOLUMNS) if isinstance(self.relation, SourceDef) else []
        return [c.name for c in self.columns] + pseudo


def plan_select(stmt: ast.Select, catalog: Catalog, raw_schema_frame: DataFrame, *,
                dialect: str = "ksql", raw_for: RawFor | None = None) -> QueryPlan:
    """Plan `stmt`; `raw_schema_frame` is any DataFrame with the raw Kafka schema of the FROM
    source (for typing); `raw_for(source, streaming)` reads the raw records of a joined one."""
    ksql_rules = catalog.get(stmt.source.name).dialect == "ksql" and dialect == "ksql"
    naming = NAMING[dialect]
    inputs = [_input(stmt.source, catalog, raw_schema_frame, stmt.emit_changes, dialect)]
    for join in stmt.joins:
        if raw_for is None:
            raise TypeError("plan_select needs raw_for to plan a join")
        inputs.append(_input(join.source, catalog, None, stmt.emit_changes, dialect, raw_for))
    aggregating = bool(stmt.group_by) or any(_aggregate_calls(i.expr) for i in stmt.items
                                             if isinstance(i, ast.SelectItem))
    _check_clauses(stmt, inputs, aggregating, ksql_rules)
    star = [(i, i.columns) for i in inputs]
    outputs = _outputs_of(stmt, star, naming, prefixed=bool(stmt.joins) and dialect == "ksql")
    if stmt.partition_by and len(stmt.items) == 1 and isinstance(stmt.items[0], ast.Star):
        outputs = _partitioned_star(outputs, stmt.partition_by, inputs[0].source, naming)
    names = [name for name, _ in outputs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates and dialect == "ksql":
        raise StatementError(f"Duplicate value columns found in schema: `{sorted(duplicates)[0]}`")
    key_names = _key_names(stmt, outputs, inputs[0], aggregating)
    observed = {f"__errors_{i}": side.relation.name for i, side in enumerate(inputs)} if stmt.joins else {}
    observed.update({"__errors_aggregate": inputs[0].relation.name} if aggregating else {})
    plan = QueryPlan(stmt, inputs[0].source, names, key_names, build=lambda raw: raw, observed=observed,
                     kind="TABLE" if aggregating or (inputs[0].kind == "TABLE" and not stmt.joins) else "STREAM",
                     aggregating=aggregating,
                     per_batch=stmt.emit_changes and bool(stmt.joins) and not aggregating
                     and all(i.kind == "TABLE" for i in inputs[1:]))

    def build(raw: DataFrame) -> DataFrame:
        plan.observations, plan.error_frames = {}, {}
        frame, scope = _from(stmt, inputs, raw, raw_for, plan)
        frame, where_error = _filtered(stmt, frame, scope)
        for expr in stmt.partition_by:  # the key is only a name here, but it must resolve
            Compiler(scope).compile(expr)
        if aggregating:
            return _aggregated(stmt, frame, scope, where_error, outputs, plan)
        return _projected(frame, scope, where_error, outputs)

    plan.build = build
    build(raw_schema_frame)  # analyse now, so bad SQL fails before any query starts
    return plan


def _input(ref: ast.SourceRef, catalog: Catalog, raw_schema_frame, push: bool, dialect: str,
           raw_for: RawFor | None = None) -> _Input:
    relation = catalog.get(ref.name)
    if isinstance(relation, ViewDef):
        inner_stmt = _as_push(relation.query, push)
        inner_source = _base(catalog, relation)
        raw = raw_schema_frame if raw_schema_frame is not None else raw_for(inner_source, push)
        inner = plan_select(inner_stmt, catalog, raw, dialect=dialect, raw_for=raw_for)
        return _Input(ref, relation, inner.source, inner.kind, [_Named(n) for n in inner.names], _view_frame(inner))
    source = relation
    frame_of = (lambda raw: logical_frame(raw if raw.isStreaming or not source.keyed else latest_per_key(raw),
                                          source))
    return _Input(ref, relation, source, source.kind, source.star_columns, frame_of)


def _base(catalog: Catalog, relation) -> SourceDef:
    while isinstance(relation, ViewDef):
        relation = catalog.get(relation.query.source.name)
    return relation


def _check_clauses(stmt: ast.Select, inputs: list[_Input], aggregating: bool, ksql_rules: bool) -> None:
    if not stmt.emit_changes and ksql_rules:
        check_pull(stmt)
    if stmt.partition_by and aggregating:
        raise StatementError("PARTITION BY and GROUP BY cannot be combined: GROUP BY already sets the key.")
    if stmt.partition_by and inputs[0].kind == "TABLE" and not stmt.joins:
        raise StatementError("Tables do not support PARTITION BY: a table's key is its PRIMARY KEY "
                             "(GROUP BY makes a table with another key).")
    if ksql_rules and aggregating and not stmt.group_by:
        first = next(c for i in stmt.items if isinstance(i, ast.SelectItem) for c in _aggregate_calls(i.expr))
        raise StatementError(f"Use of aggregate function {first.name} requires a GROUP BY clause.")
    if stmt.window is not None and not aggregating:
        raise StatementError("A WINDOW clause needs GROUP BY: windows group records by ROWTIME "
                             "for an aggregation.")
    if stmt.window is not None and stmt.window.kind not in WINDOWS:
        raise StatementError(f"{stmt.window.kind} windows are not supported yet by kafkasql_magic: Spark emits "
                             "them only once they close (behind a watermark), not as they change.")
    if stmt.having is not None and not aggregating:
        raise StatementError("HAVING requires a GROUP BY clause (or an aggregate in the SELECT list).")
    for join, right in zip(stmt.joins, inputs[1:]):
        _check_join(join, inputs[0], right, stmt.emit_changes, ksql_rules)


#: Outer joins Spark can run between a stream (left) and a table snapshot (right).
STREAM_TABLE_JOINS = ("INNER", "LEFT")


def _check_join(join: ast.Join, left: _Input, right: _Input, push: bool, ksql_rules: bool) -> None:
    left_kind = left.kind
    pair = f"{left_kind}-{right.kind}"
    if ksql_rules and pair == "STREAM-STREAM" and join.within is None:
        raise StatementError(
            "Stream-Stream joins must have a WITHIN clause specified. None was provided. To learn about how to "
            "specify a WITHIN clause with a stream-stream join, please visit: "
            "https://docs.confluent.io/current/ksql/docs/syntax-reference.html#create-stream-as-select")
    if join.within is not None and right.kind == "TABLE":
        raise StatementError(
            f"A window definition was provided for a {left_kind.capitalize()}-Table join. These joins are not "
            "windowed. Please drop the window definition (ie. the WITHIN clause) and try to execute your join again.")
    if not push:
        return
    if pair == "TABLE-STREAM":
        raise StatementError(f"Invalid join order: table-stream joins are not supported; only stream-table joins. "
                             f"Got {left.relation.name} {join.kind} JOIN {right.relation.name}.")
    if pair == "TABLE-TABLE":
        raise StatementError("Table-table joins in push queries are not supported yet by kafkasql_magic: "
                             "join a stream with a table, or query the tables without EMIT CHANGES.")
    if pair == "STREAM-TABLE" and join.kind not in STREAM_TABLE_JOINS:
        raise StatementError(f"{join.kind} OUTER joins between a stream and a table are not supported: "
                             "use INNER or LEFT JOIN.")
    if pair == "STREAM-STREAM" and join.kind != "INNER":
        raise StatementError(f"{join.kind} OUTER joins between two streams are not supported yet by kafkasql_magic "
                             "(Spark emits their unmatched rows only behind an event-time watermark): use INNER JOIN.")


#: AST join kind -> Spark join type.
SPARK_JOINS = {"INNER": "inner", "LEFT": "left_outer", "RIGHT": "right_outer", "FULL": "full_outer"}


def _from(stmt: ast.Select, inputs: list[_Input], raw: DataFrame, raw_for: RawFor | None,
          plan: QueryPlan) -> tuple[DataFrame, Scope]:
    """The FROM clause: one source's rows, or the joined rows of several."""
    first = inputs[0]
    frame = first.frame_of(raw)
    if not stmt.joins:
        qualifiers = {first.relation.name} | ({stmt.source.alias} if stmt.source.alias else set())
        return frame, Scope(frame, set(first.visible), qualifiers)
    sides = []
    for index, side in enumerate(inputs):
        if index:
            streaming = raw.isStreaming and side.kind == "STREAM"
            frame_i = side.frame_of(raw_for(side.source, streaming))
        else:
            frame_i = frame
        frame_i = _without_errors(frame_i, f"__errors_{index}", plan, raw.isStreaming)
        columns = {name: f"__s{index}_{name}" for name in side.visible}
        kept = [F.col(quoted(n)).alias(c) for n, c in columns.items()]
        frame_i = frame_i.select(*kept, *([F.col(c) for c in BOOKKEEPING] if index == 0 else []))
        sides.append((side.qualifiers, columns))
        if index == 0:
            frame = frame_i
            continue
        join = stmt.joins[index - 1]
        both = frame.crossJoin(frame_i)  # for typing the condition only
        condition = Compiler(JoinScope(both, set(), set(), sides=list(sides))).compile(join.on)
        if join.within is not None:
            condition = condition & _within(join.within, sides[0][1].get("ROWTIME"), columns.get("ROWTIME"))
        frame = frame.join(frame_i, condition, SPARK_JOINS[join.kind])
    frame = frame.withColumn(ERROR, F.lit(None).cast("string")).withColumn(DROP, F.lit(False))
    return frame, JoinScope(frame, set(), set(), sides=sides)


def _within(window: tuple[int, int], left_time: str | None, right_time: str | None) -> Column:
    """ksqlDB's WITHIN (before, after): the right record's time lies in [left - before, left + after]."""
    if left_time is None or right_time is None:
        raise StatementError("WITHIN needs record times (ROWTIME) on both sides of the join.")
    before, after = window
    left, right = F.col(quoted(left_time)), F.col(quoted(right_time))
    return right.between(left - F.lit(before), left + F.lit(after))


_ERROR_FIELDS = (ERROR, TOPIC, PARTITION, OFFSET, RAW_KEY, RAW_VALUE)


def _without_errors(frame: DataFrame, name: str, plan: QueryPlan, streaming: bool) -> DataFrame:
    """The rows without errors; the failed ones are collected as the metric `name` (per
    micro-batch when the query is `streaming`, even over a table read as a snapshot), so the
    processing log gets them although they never reach the result."""
    as_text = [F.base64(F.col(c)).alias(c) if c in (RAW_KEY, RAW_VALUE) else F.col(c) for c in _ERROR_FIELDS]
    failed = F.collect_list(F.when(F.col(ERROR).isNotNull(), F.struct(*as_text)))  # bytes as base64: the
    # progress JSON that carries streaming metrics has no bytes type
    if streaming:
        observed = frame.observe(name, failed.alias("errors"))
    elif plan.per_batch:  # inside foreachBatch, where an Observation overflows Spark's stack;
        frame = frame.localCheckpoint()  # read and decoded once for both the errors and the join
        plan.error_frames[name] = frame.where(F.col(ERROR).isNotNull()).select(F.struct(*as_text).alias("e"))
        observed = frame
    else:
        observation = Observation(name)
        plan.observations[name] = observation
        observed = frame.observe(observation, failed.alias("errors"))
    return observed.where(F.col(ERROR).isNull())


def _filtered(stmt: ast.Select, frame: DataFrame, scope: Scope) -> tuple[DataFrame, Column]:
    """WHERE: failing rows stay (to be logged) with the error column set."""
    if stmt.where is None:
        return frame, F.lit(None).cast("string")
    where = Compiler(scope)
    keep = where.compile(stmt.where)
    where_error = _computing_error(where, stmt.where, "WHERE", None)
    frame = frame.where(F.col(ERROR).isNotNull() | where_error.isNotNull() | keep)
    return frame.withColumn("__WHERE_ERROR", where_error), F.col("__WHERE_ERROR")


def _projected(frame: DataFrame, scope: Scope, where_error: Column, outputs) -> DataFrame:
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


def _aggregate_calls(expr: ast.Expr) -> list[ast.FunctionCall]:
    """The outermost aggregate calls in `expr`."""
    if isinstance(expr, ast.FunctionCall) and is_aggregate(expr.name):
        return [expr]
    return [call for child in ast.children(expr) for call in _aggregate_calls(child)]


def _substitute(node, table: dict):
    """`node` with every sub-expression found in `table` replaced by its entry."""
    if isinstance(node, ast.Expr) and node in table:
        return table[node]
    if isinstance(node, tuple):
        return tuple(_substitute(item, table) for item in node)
    if not isinstance(node, ast.Node):
        return node
    return replace(node, **{f.name: _substitute(getattr(node, f.name), table) for f in fields(node)
                            if f.name not in ("line", "column")})


def _aggregated(stmt: ast.Select, frame: DataFrame, scope: Scope, where_error: Column, outputs,
                plan: QueryPlan) -> DataFrame:
    """GROUP BY: group keys and aggregate arguments per record (a record whose expressions fail
    is logged and left out), Spark's aggregation, then SELECT and HAVING over the groups."""
    errors = [F.col(ERROR), where_error]
    staged, table = [], {}
    for index, expr in enumerate(stmt.group_by):
        compiler = Compiler(scope)
        staged.append(compiler.compile(expr).alias(f"__g{index}"))
        errors += [_computing_error(compiler, expr, "GROUP BY", index)] if compiler.failures else []
        table[expr] = ast.ColumnRef(f"__g{index}")
    keys = [F.col(f"__g{i}") for i in range(len(stmt.group_by))]
    if stmt.window is not None:
        rowtime = ast.ColumnRef("ROWTIME", (stmt.source.alias or stmt.source.name) if stmt.joins else None)
        staged.append(F.timestamp_millis(Compiler(scope).compile(rowtime)).alias("__ts"))
        keys.append(WINDOWS[stmt.window.kind](stmt.window).alias("__window"))
        table.update(WINDOW_BOUNDS)
    calls = list(dict.fromkeys(c for _, e in outputs for c in _aggregate_calls(e)))
    calls += [c for c in _aggregate_calls(stmt.having) if c not in calls] if stmt.having is not None else []
    builders = []
    for index, call in enumerate(calls):
        aggregate = lookup_aggregate(call.name, len(call.args), call.star)
        compiler = Compiler(scope)
        args = [compiler.compile(a) for a in call.args]
        staged += [a.alias(f"__a{index}_{n}") for n, a in enumerate(args)]
        errors += [_computing_error(compiler, call, call.name, index)] if compiler.failures else []
        builders.append((aggregate, [scope.type_of(a) for a in args]))
        table[call] = ast.ColumnRef(f"__agg{index}")
    failed = F.coalesce(*errors)
    staged = frame.select(*staged, F.col(OFFSET).alias("__order"), failed.alias(ERROR),
                          *[F.col(c) for c in _ERROR_FIELDS[1:]])
    good = _without_errors(staged, "__errors_aggregate", plan, staged.isStreaming)
    grouped = good.groupBy(*keys).agg(
        *[aggregate.build([F.col(f"__a{i}_{n}") for n in range(len(types_))], types_, F.col("__order"))
          .alias(f"__agg{i}") for i, (aggregate, types_) in enumerate(builders)]) if builders else \
        good.groupBy(*keys).agg(F.count(F.lit(1)).alias("__n"))
    if stmt.window is not None:
        grouped = grouped.select("*", F.unix_millis(F.col("__window.start")).alias("__wstart"),
                                 F.unix_millis(F.col("__window.end")).alias("__wend"))
    groups = Scope(grouped, set(grouped.columns), set())
    if stmt.having is not None:
        having = _substitute(stmt.having, table)
        _check_grouped(having, "HAVING expression")
        grouped = grouped.where(Compiler(groups).compile(having))
    values = []
    for index, (name, expr) in enumerate(outputs):
        grouped_expr = _substitute(expr, table)
        _check_grouped(grouped_expr, "SELECT expression(s)")
        values.append(Compiler(groups).compile(grouped_expr).alias(f"_c{index}"))
    meta = [F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP), F.lit(None).cast("string").alias(TOPIC),
            F.lit(None).cast("int").alias(PARTITION), F.lit(None).cast("bigint").alias(OFFSET),
            F.lit(None).cast("binary").alias(RAW_KEY), F.lit(None).cast("binary").alias(RAW_VALUE),
            F.lit(None).cast("array<struct<key:string,value:binary>>").alias(RAW_HEADERS), F.lit(None).cast("timestamp").alias(RAW_TIMESTAMP)]
    return grouped.select(*values, *meta)


#: Window kind -> Spark's grouping window over the staged record time `__ts` (epoch-aligned, as in ksqlDB).
WINDOWS: dict[str, Callable[[ast.Window], Column]] = {
    "TUMBLING": lambda w: F.window("__ts", f"{w.size} milliseconds"),
    "HOPPING": lambda w: F.window("__ts", f"{w.size} milliseconds", f"{w.advance} milliseconds"),
}

#: WINDOWSTART / WINDOWEND (BIGINT ms) -> the grouped frame's columns.
WINDOW_BOUNDS = {ast.ColumnRef("WINDOWSTART"): ast.ColumnRef("__wstart"),
                 ast.ColumnRef("WINDOWEND"): ast.ColumnRef("__wend")}


def _check_grouped(grouped: ast.Expr, what: str) -> None:
    """After substitution only group keys and aggregates may remain (ksqlDB's message)."""
    loose = [n for n in ast.walk(grouped) if isinstance(n, ast.ColumnRef) and not n.name.startswith("__")]
    if loose:
        raise StatementError(f"Non-aggregate {what} not part of GROUP BY: "
                             + ", ".join(dict.fromkeys(render(n) for n in loose)))


def _key_names(stmt: ast.Select, outputs, first: _Input, aggregating: bool) -> list[str]:
    """The result's key: GROUP BY or PARTITION BY expressions when selected, else the source's key."""
    keys = (stmt.group_by + (tuple(WINDOW_BOUNDS) if stmt.window else ())) if aggregating else stmt.partition_by
    if keys:
        return [n for n, e in outputs if e in keys]
    if stmt.joins:
        return []
    key_columns = {c.name.lower() for c in first.source.key_columns}
    return [n for n, e in outputs if isinstance(e, ast.ColumnRef) and e.name.lower() in key_columns]


def _partitioned_star(outputs, partition_by, source: SourceDef, naming: Naming):
    """`SELECT * ... PARTITION BY x`: x becomes the key, first; the old key columns move to
    the end of the value columns (ksqlDB's repartition schema)."""
    keys, generated = [], 0
    for expr in partition_by:
        if isinstance(expr, ast.ColumnRef):
            keys.append((naming.fold(expr.name), expr))
        else:
            keys.append((naming.generated(generated, expr), expr))
            generated += 1
    key_names = {n.lower() for n, _ in keys}
    old_keys = {c.name.lower() for c in source.key_columns}
    rest = [(n, e) for n, e in outputs if n.lower() not in key_names]
    return keys + [o for o in rest if o[0].lower() not in old_keys] + [o for o in rest if o[0].lower() in old_keys]


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


#: Clauses a ksqlDB pull query refuses, with the clause's name in the message.
PULL_CLAUSES = (("GROUP BY", lambda s: s.group_by), ("HAVING", lambda s: s.having is not None),
                ("WINDOW", lambda s: s.window is not None),
                ("PARTITION BY", lambda s: s.partition_by), ("JOIN", lambda s: s.joins))


def check_pull(stmt: ast.Select) -> None:
    for clause, present in PULL_CLAUSES:
        if present(stmt):
            raise StatementError(f"Pull queries don't support {clause} clauses.")
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


def _outputs_of(stmt: ast.Select, star, naming: Naming = NAMING["ksql"], *,
                prefixed: bool = False) -> list[tuple[str, ast.Expr]]:
    """(output name, expression) per result column, with the dialect's naming rules. `star`
    lists (input, columns) per FROM item; `prefixed` names a join's `*` columns as ksqlDB
    does (`A_ID`, after the source's alias or name)."""
    outputs: list[tuple[str, ast.Expr]] = []
    generated = 0
    joined = len(star) > 1
    for item in stmt.items:
        if isinstance(item, ast.Star):
            for side, columns in star:
                if item.qualifier is not None and joined and \
                        item.qualifier.lower() not in {q.lower() for q in side.qualifiers}:
                    continue
                qualifier = side.qualifiers[0] if joined else None
                prefix = f"{naming.fold(qualifier)}_" if prefixed else ""
                outputs += [(prefix + naming.fold(c.name), ast.ColumnRef(c.name, qualifier)) for c in columns]
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
    outputs = _outputs_of(stmt, [(None, columns)])
    scope = Scope(frame, set(frame.columns), {qualifier})
    if stmt.where is not None:
        frame = frame.where(Compiler(scope).compile(stmt.where))
    result = frame.select(*[Compiler(scope).compile(e).alias(f"_c{i}") for i, (_, e) in enumerate(outputs)])
    if stmt.limit is not None:
        result = result.limit(stmt.limit)
    return [name for name, _ in outputs], result
