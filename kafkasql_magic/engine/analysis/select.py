"""SELECT analysis: the statement, the catalog and the dialect -> a QueryPlan. Pure: no Spark.

Every decision about a query is made here, once: result names, keys, clause rules, GROUP BY
rewriting, what the WHERE clause lets the read skip, per-batch or not, and how failed
records are captured. Column resolution and typing are Spark's, in the build step.
"""

from __future__ import annotations

from dataclasses import replace

from ... import dialects
from ...catalog import Catalog, SourceDef, ViewDef
from ...dialects import Dialect
from ...dialects.custom_types import with_custom_types
from ...errors import StatementError
from ...sql import ast
from ...sql.ast_materialize import Subquery
from ...sql.typetext import display
from ..columns import PSEUDOCOLUMNS, RESERVED_COLUMN_NAMES
from ..table_aggregate.rules import check_table_aggregates, keyed
from .checks import check_clauses, check_persistent
from .grouping import (WINDOW_BOUNDS, aggregate_calls, by_select_items, check_aggregate_rules, check_group_by_unique,
                       grouping_of, qualified)
from .plan import (CAPTURE_FRAMES, CAPTURE_METRICS, CAPTURE_NONE, CAPTURE_OBSERVATIONS, STREAM, TABLE, Input,
                   QueryPlan)
from .join_key import JoinKey, check_join_key_type, is_synthetic_ref, join_key_of, key_output
from .lookup import key_lookup
from .seek import Seek, seek_of
from ..lookup_join.choice import check_lookup_join, looks_up_table
from ..table_join.kinds import FOREIGN_KEY, check_aggregated_table_join, left_key_outputs, table_join_kind
from .types import check_types
from .windowed_source import WINDOW_BOUNDS as WINDOW_BOUNDS_OF_SOURCE
from .windowed_source import check_window_bounds, star_columns, window_of
from ..window.timing import SESSION_AFTER_STREAM_JOIN, check_window_timing, tracks_stream_time



def analyse(stmt: ast.Select, catalog: Catalog, dialect: str | Dialect = "ksql", text: str | None = None) -> QueryPlan:
    """The plan of `stmt` in `dialect` against `catalog`; `text` is the cell the statement came
    from, for a caret under a type error."""
    dialect = dialects.get(dialect)
    if catalog.types:  # Materialize's CREATE TYPE names, in the query's casts
        stmt = with_custom_types(stmt, catalog.types)
    inputs = [_input(ref, catalog, stmt.emit_changes, dialect) for ref in (stmt.source, *(j.source for j in stmt.joins))]
    if dialect.groups_by_select_items and stmt.group_by:
        stmt = by_select_items(stmt, inputs)
    first = inputs[0]
    written_in = _written_in(stmt.source, catalog, dialect)
    aggregating = bool(stmt.group_by) or any(aggregate_calls(i.expr) for i in stmt.items
                                             if isinstance(i, ast.SelectItem))
    from ..diff_join.rules import joins_with_diffs  # here: that family's rules import this package

    diffs = joins_with_diffs(stmt, inputs, dialect, aggregating)
    check_clauses(stmt, inputs, aggregating, dialect.ksql_clause_rules and written_in.ksql_clause_rules, diffs)
    check_window_timing(stmt, aggregating)
    if not stmt.emit_changes and dialect.ksql_clause_rules:
        check_window_bounds(stmt, first.source if first.view is None else None)
    join = join_key_of(stmt, inputs) if dialect.synthetic_join_key else None
    outputs = outputs_of(stmt, inputs, dialect.naming, prefixed=bool(stmt.joins) and dialect.prefixes_join_star,
                         synthetic=join.synthetic if join else None)
    if stmt.partition_by and len(stmt.items) == 1 and isinstance(stmt.items[0], ast.Star):
        if stmt.joins and dialect.prefixes_join_star and stmt.items[0].qualifier is None:
            outputs = repartitioned_join_star(inputs, dialect.naming)
        outputs = partitioned_star(outputs, stmt.partition_by, first.source, dialect.naming,
                                   inputs if stmt.joins else None)
    if aggregating and dialect.ksql_clause_rules and written_in.ksql_clause_rules:
        check_group_by_unique(stmt, inputs)
        check_aggregate_rules(stmt)
    grouping = grouping_of(stmt, outputs, inputs) if aggregating else None
    table_join = None if diffs else table_join_kind(stmt, inputs)
    check_aggregated_table_join(stmt, aggregating, table_join)
    retracts = retracting(stmt, first, aggregating, table_join)
    if retracts and dialect.ksql_clause_rules and written_in.ksql_clause_rules:
        check_table_aggregates(call.name for call in grouping.calls)
    check_lookup_join(stmt, inputs, aggregating)
    tracks_time = tracks_stream_time(stmt, aggregating) and all(i.kind == TABLE for i in inputs[1:])
    if stmt.window is not None and stmt.window.kind == "SESSION" and not tracks_time:
        raise StatementError(SESSION_AFTER_STREAM_JOIN)
    looks_up = looks_up_table(stmt, inputs, diffs)
    per_batch = (retracts and not keyed(call.name for call in grouping.calls)) or (
        stmt.emit_changes and bool(stmt.joins) and not aggregating and all(i.kind == TABLE for i in inputs[1:])
        and table_join is None and not diffs and not looks_up)
    observed = tuple((f"__errors_{i}", side.name) for i, side in enumerate(inputs)) if stmt.joins else ()
    observed += (("__errors_aggregate", first.name),) if aggregating else ()
    seekable = stmt.emit_changes and dialects.get(first.source.dialect).seeks_pseudocolumns and not stmt.joins
    keys = () if diffs else tuple(
        left_key_outputs(outputs, inputs) if table_join == FOREIGN_KEY and not (aggregating or join and join.synthetic)
        else key_names(stmt, outputs, inputs, aggregating, join))
    if join is not None and join.synthetic is None and not (
            aggregating or stmt.partition_by or (table_join == FOREIGN_KEY and len(stmt.joins) == 1)):
        join = replace(join, filled=keys)  # the key columns take the join key where their side is missing
    plan = QueryPlan(
        statement=stmt, inputs=tuple(inputs), outputs=tuple(outputs), keys=keys,
        kind=TABLE if not diffs and (aggregating or table_join or (first.kind == TABLE and not stmt.joins)) else STREAM,
        grouping=grouping, per_batch=per_batch, observed=observed,
        capture=_capture(observed, per_batch, stmt.emit_changes),
        seek=seek_of(stmt.where) if seekable else Seek(), retracts=retracts, dialect=dialect,
        tracks_time=tracks_time, lookup=key_lookup(stmt, first.source) if first.view is None else None,
        table_join=table_join, join_key=join, diffs=diffs, looks_up=looks_up)
    checked = check_types(plan, dialect, text)
    check_join_key_type(join, checked.checker.type_of)
    if dialect.refuses_duplicate_names:
        check_duplicates(outputs, checked.checker.type_of)
    return plan


def check_duplicates(outputs, type_of) -> None:
    """ksqlDB names the first repeated result column with the type of its second use."""
    seen: set[str] = set()
    for name, expr in outputs:
        if name in seen:
            found = type_of(expr)
            typed = f" {display(found)}" if found is not None else ""
            raise StatementError(f"Duplicate value columns found in schema: `{name}`{typed}")
        seen.add(name)


def retracting(stmt: ast.Select, first: Input, aggregating: bool, table_join: str | None) -> bool:
    """A push aggregation over one TABLE (not windowed, not through a view) or over a join of
    tables (`table_join`) retracts a row's old version from its group before adding the new
    one, as ksqlDB's table aggregations do."""
    return (aggregating and stmt.emit_changes and (not stmt.joins or table_join is not None)
            and stmt.window is None and first.kind == TABLE and first.view is None)


def _capture(observed, per_batch: bool, push: bool) -> str:
    if not observed:
        return CAPTURE_NONE
    if per_batch:
        return CAPTURE_FRAMES
    return CAPTURE_METRICS if push else CAPTURE_OBSERVATIONS


def _written_in(item, catalog: Catalog, dialect: Dialect) -> Dialect:
    """The dialect of the FROM relation (a subquery is the query's own)."""
    return dialect if isinstance(item, Subquery) else dialects.get(catalog.get(item.name, dialect.name).dialect)


def _input(ref: ast.SourceRef | Subquery, catalog: Catalog, push: bool, dialect: Dialect) -> Input:
    if isinstance(ref, Subquery):  # a derived relation: planned as a view that has no name
        if ref.query.limit is not None and push:
            raise StatementError(f"line {ref.line}:{ref.column}: LIMIT inside a subquery in FROM limits snapshot "
                                 "queries (SELECT) only, not SUBSCRIBE")
        inner = analyse(replace(ref.query, emit_changes=push), catalog, dialect)
        alias = ref.alias or ""
        return Input(ast.SourceRef(alias, None, line=ref.line, column=ref.column), alias, inner.source, inner.kind,
                     _view_columns(inner), (), view=inner)
    relation = catalog.get(ref.name, dialect.name)
    if isinstance(relation, ViewDef):
        inner = analyse(replace(relation.query, emit_changes=push, limit=None), catalog, dialect)
        return Input(ref, relation.name, inner.source, inner.kind, _view_columns(inner), (), view=inner)
    columns = tuple(c.name for c in relation.star_columns)
    if window_of(relation) is not None:  # one row per key and window: the bounds are part of the key
        columns = star_columns(relation, columns)
    return Input(ref, relation.name, relation, relation.kind, columns, PSEUDOCOLUMNS)


def _view_columns(inner: QueryPlan) -> tuple[str, ...]:
    """A view's columns: its own (a view that joins with diffs carries mz_timestamp and mz_diff beside them)."""
    return tuple(name for name, _ in inner.outputs)


def outputs_of(stmt: ast.Select, inputs, naming=dialects.KSQL.naming, *,
               prefixed: bool = False, synthetic: str | None = None) -> list[tuple[str, ast.Expr]]:
    """(output name, expression) per result column, with the dialect's naming rules. `inputs`
    are the FROM items (anything with `qualifiers` and `columns`); `prefixed` names a join's
    `*` columns, and a column several sources have, as ksqlDB does (`A_ID`, after the source's alias or name).
    A join's `synthetic` key column (join_key.py) comes first in an unqualified `*`, as in ksqlDB."""
    outputs: list[tuple[str, ast.Expr]] = []
    aliases = naming.aliases(naming.fold(c) for side in inputs for c in side.columns)
    joined = len(inputs) > 1
    seen = [c.lower() for side in inputs for c in dict.fromkeys(side.columns)]
    common = {c for c in seen if seen.count(c) > 1}  # columns more than one joined source has
    for item in stmt.items:
        if isinstance(item, ast.Star):
            if item.qualifier is not None and not any(
                    item.qualifier.lower() in {q.lower() for q in side.qualifiers} for side in inputs):
                raise StatementError(f"'{item.qualifier.upper()}' is not a valid stream/table name or alias.")
            if synthetic is not None and item.qualifier is None:
                outputs.append((synthetic, ast.ColumnRef(synthetic)))
            for side in inputs:
                if item.qualifier is not None and joined and \
                        item.qualifier.lower() not in {q.lower() for q in side.qualifiers}:
                    continue
                qualifier = side.qualifiers[0] if joined else None
                prefix = f"{naming.fold(qualifier)}_" if prefixed else ""
                name = naming.own if _same_dialect(side, naming) else naming.fold
                outputs += [(prefix + name(c), ast.ColumnRef(c, qualifier)) for c in side.columns]
            continue
        if item.alias is not None:
            if item.alias.upper() in RESERVED_COLUMN_NAMES and not (  # `l.ROWTIME AS ROWTIME` names itself
                    isinstance(item.expr, ast.ColumnRef) and item.expr.name.upper() == item.alias.upper()):
                raise StatementError(
                    f"`{item.alias.upper()}` is a reserved column name. You cannot use it as an alias for a column."
                )
            outputs.append((item.alias, item.expr))
        elif isinstance(item.expr, ast.ColumnRef) and prefixed and (
                item.expr.name.lower() in common or joined and item.expr.name.upper() in PSEUDOCOLUMNS):
            outputs.append((_joined_name(item.expr, inputs, naming), item.expr))
        elif isinstance(item.expr, ast.ColumnRef):
            outputs.append((naming.own(item.expr.name), item.expr))
        else:
            outputs.append((aliases.name_for(item.expr), item.expr))
    return outputs


def _joined_name(ref: ast.ColumnRef, inputs, naming) -> str:
    """ksqlDB names a column that several joined sources have after the source it comes from:
    `t.id` -> `T_ID` (its alias, else its name)."""
    side = next((s for s in inputs if ref.qualifier is not None
                 and ref.qualifier.lower() in {q.lower() for q in s.qualifiers}), None)
    if side is None:
        return naming.own(ref.name)  # unqualified: the type checker reports it as ambiguous
    return f"{naming.fold(side.qualifiers[0])}_{naming.own(ref.name)}"


def _same_dialect(side, naming) -> bool:
    """Whether `side`'s columns were named in the dialect of `naming` (a view's outputs are: its
    query is analysed in the querying dialect)."""
    if getattr(side, "view", None) is not None:
        return True
    source = getattr(side, "source", None)
    return source is not None and dialects.get(source.dialect).naming is naming


def key_names(stmt: ast.Select, outputs, inputs, aggregating: bool, join: JoinKey | None = None) -> list[str]:
    """The result's key: GROUP BY or PARTITION BY expressions when selected, a join's key column
    (one the chain's ON clauses make equivalent, or its synthetic key column), else the source's key.
    In ksqlDB's order, whatever the projection's: the GROUP BY or PARTITION BY expressions' order,
    else the source's key columns' (its `Selection` keeps the upstream key's order), so a sink's
    key columns, and so its key bytes, are ksqlDB's."""
    keys = (stmt.group_by + (tuple(WINDOW_BOUNDS) if stmt.window else ())) if aggregating else stmt.partition_by
    if keys:  # selected with or without the source's qualifier
        selected = [(n, qualified(e, inputs)) for n, e in outputs]
        return list(dict.fromkeys(n for k in keys for n, e in selected if e == qualified(k, inputs)))
    if join is not None and join.synthetic is not None:
        return [n for n, e in outputs if is_synthetic_ref(e, join)]
    if join is not None:
        return key_output(join, outputs, inputs)
    if stmt.joins:
        return join_key(stmt.joins[-1].on, outputs, inputs)
    first = inputs[0]
    key_columns = [c.name.lower() for c in first.source.key_columns]
    if first.view is None and window_of(first.source) is not None:
        key_columns += [b.lower() for b in WINDOW_BOUNDS_OF_SOURCE]
    return in_key_order(outputs, key_columns)


def in_key_order(outputs, key_columns: list[str], selects=lambda e: True) -> list[str]:
    """The outputs that select a key column (lower-cased names, in the key's order), in that order."""
    return [n for k in key_columns for n, e in outputs
            if isinstance(e, ast.ColumnRef) and e.name.lower() == k and selects(e)]


def is_null(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Literal) and expr.kind == "NULL"


def side_of(ref: ast.ColumnRef, inputs) -> tuple[int, str] | None:
    """(index of the FROM item, column) a column reference of a join names (None: unknown or ambiguous)."""
    name = ref.name.lower()
    if ref.qualifier is not None:
        found = [i for i, s in enumerate(inputs) if ref.qualifier.lower() in {q.lower() for q in s.qualifiers}]
    else:
        found = [i for i, s in enumerate(inputs) if name in {c.lower() for c in s.columns}]
    return (found[0], name) if len(found) == 1 else None


def join_key(on: ast.Expr, outputs, inputs) -> list[str]:
    """A join without ksqlDB's join key (join_key.py; the Materialize dialect) is keyed by the
    columns its last ON clause equates: the leftmost side's selected one, under its result name."""
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return []
    joined = {side_of(e, inputs) for e in (on.left, on.right) if isinstance(e, ast.ColumnRef)} - {None}
    found = [(side_of(e, inputs), n) for n, e in outputs if isinstance(e, ast.ColumnRef) and side_of(e, inputs) in joined]
    return [min(found, key=lambda f: f[0][0])[1]] if found else []  # the leftmost side's column wins


#: The pseudocolumns ksqlDB copies into each joined side's value (`withPseudoAndKeyColsInValue`).
JOINED_PSEUDOCOLUMNS = ("ROWTIME", "ROWPARTITION", "ROWOFFSET")


def repartitioned_join_star(inputs, naming) -> list[tuple[str, ast.Expr]]:
    """`SELECT *` over a join with PARTITION BY: ksqlDB repartitions the join's own schema, in
    which each side's value holds its value columns, its pseudocolumns and its key columns
    (`L_B, L_C, L_ROWTIME, L_ROWPARTITION, L_ROWOFFSET, L_A`), so all of them are written."""
    outputs = []
    for side in inputs:
        qualifier = side.qualifiers[0]
        prefix = f"{naming.fold(qualifier)}_"
        name = naming.own if _same_dialect(side, naming) else naming.fold
        keys = {c.name.lower() for c in side.source.key_columns} if side.view is None else set()
        values = [c for c in side.columns if c.lower() not in keys]
        outputs += [(prefix + name(c), ast.ColumnRef(c, qualifier)) for c in values]
        outputs += [(prefix + p, ast.ColumnRef(p, qualifier)) for p in JOINED_PSEUDOCOLUMNS]
        outputs += [(prefix + name(c), ast.ColumnRef(c, qualifier)) for c in side.columns if c.lower() in keys]
    return outputs


def partitioned_star(outputs, partition_by, source: SourceDef, naming, inputs=None):
    """`SELECT * ... PARTITION BY x`: x becomes the key, first; the old key columns move to
    the end of the value columns (ksqlDB's repartition schema). Over a join (`inputs`), a
    column `*` already gives (`L_B` for `l.b`) becomes the key under that name."""
    keys = []
    aliases = naming.aliases(naming.fold(c.name) for c in source.columns)
    for expr in (e for e in partition_by if not is_null(e)):  # PARTITION BY NULL: no key at all
        target = side_of(expr, inputs) if inputs and isinstance(expr, ast.ColumnRef) else None
        same = next((n for n, e in outputs if target and isinstance(e, ast.ColumnRef)
                     and side_of(e, inputs) == target), None)
        if same is not None:
            keys.append((same, expr))
            continue
        name = naming.own(expr.name) if isinstance(expr, ast.ColumnRef) else aliases.name_for(expr)
        keys.append((name, expr))
    key_names_ = {n.lower() for n, _ in keys}
    old_keys = {c.name.lower() for c in source.key_columns}
    rest = [(n, e) for n, e in outputs if n.lower() not in key_names_]
    return keys + [o for o in rest if o[0].lower() not in old_keys] + [o for o in rest if o[0].lower() in old_keys]


__all__ = ["analyse", "retracting", "check_persistent", "key_names", "outputs_of",
           "partitioned_star"]
