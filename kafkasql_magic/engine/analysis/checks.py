"""Clause rules: what a query may combine, with ksqlDB's messages where ksqlDB has them."""

from __future__ import annotations

from ...dialects import KSQL
from ...errors import StatementError
from ...sql import ast
from ...sql.render import render
from ...sql.typetext import display
from ...typecheck import lambdas, signatures
from ..columns import PSEUDOCOLUMNS, RESERVED_COLUMN_NAMES, ROWOFFSET, ROWPARTITION
from .grouping import aggregate_calls, check_ungrouped_selects
from .plan import Input

#: Outer joins Spark can run between a stream (left) and a table snapshot (right).
STREAM_TABLE_JOINS = ("INNER", "LEFT")

#: Pseudocolumns a pull query cannot use (KLIP-50): they are not kept in table state.
PULL_UNSUPPORTED = (ROWPARTITION, ROWOFFSET)

#: What ksqlDB adds to every refused pull query.
PULL_QUERY_SYNTAX_HELP = (" See https://cnfl.io/queries for more info.\n"
                          "Add EMIT CHANGES if you intended to issue a push query.")

#: Clauses a ksqlDB pull query refuses, with the clause's name in the message.
PULL_CLAUSES = (("GROUP BY", lambda s: s.group_by), ("HAVING", lambda s: s.having is not None),
                ("WINDOW", lambda s: s.window is not None),
                ("PARTITION BY", lambda s: s.partition_by), ("JOIN", lambda s: s.joins))


def check_functions(stmt: ast.Select) -> None:
    """ksqlDB names an unknown function before it checks anything about grouping."""
    exprs = [i.expr for i in stmt.items if isinstance(i, ast.SelectItem)] + list(stmt.group_by) + \
        list(stmt.partition_by) + [j.on for j in stmt.joins] + \
        [e for e in (stmt.where, stmt.having) if e is not None]
    for expr in exprs:
        for node in ast.walk(expr):
            if isinstance(node, ast.FunctionCall) and (not signatures.is_known(node.name)
                                                       or node.name in KSQL.absent_functions) \
                    and not lambdas.is_lambda_function(node.name):
                raise StatementError(f"Can't find any functions with the name '{node.name}'")


def check_grouping_keys(stmt: ast.Select) -> None:
    for expr in stmt.group_by:
        calls = aggregate_calls(expr)
        if calls:
            raise StatementError(f"GROUP BY does not support aggregate functions: {calls[0].name} is an "
                                 "aggregate function.")


#: ksqlDB's refusal to re-key a source whose key holds a window (issue 4385 in its tracker).
WINDOWED_REPARTITION = ("Implicit repartitioning of windowed sources is not supported. "
                        "See https://github.com/confluentinc/ksql/issues/4385.")


def _windowed(side: Input) -> bool:
    return side.view is None and bool(side.source.properties.get("WINDOW_TYPE"))


def _key_columns(side: Input) -> set[str]:
    return {c.name.lower() for c in side.source.key_columns}


def check_windowed_keys(stmt: ast.Select, inputs: list[Input]) -> None:
    """A windowed source keeps its key: PARTITION BY or a join on anything else would re-key it."""
    first = inputs[0]
    if _windowed(first) and stmt.partition_by and not all(
            isinstance(e, ast.ColumnRef) and e.name.lower() in _key_columns(first) for e in stmt.partition_by):
        raise StatementError(WINDOWED_REPARTITION)
    for join in stmt.joins:
        for side in inputs:
            if not _windowed(side):
                continue
            names = {q.lower() for q in side.qualifiers}
            used = [n for n in ast.walk(join.on) if isinstance(n, ast.ColumnRef)
                    and (n.qualifier or "").lower() in names]
            if any(n.name.lower() not in _key_columns(side) for n in used):
                raise StatementError(WINDOWED_REPARTITION)


def check_clauses(stmt: ast.Select, inputs: list[Input], aggregating: bool, ksql_rules: bool,
                  diffs: bool = False) -> None:
    """`diffs`: a join over whole collections (Materialize's SUBSCRIBE), which any join order and kind may be."""
    if ksql_rules:
        check_join_sources(inputs)
        check_functions(stmt)
        check_windowed_keys(stmt, inputs)
    check_grouping_keys(stmt)
    if not stmt.emit_changes and ksql_rules:
        check_pull(stmt)
    if len(stmt.partition_by) > 1 and any(isinstance(e, ast.Literal) and e.kind == "NULL" for e in stmt.partition_by):
        raise StatementError("Cannot PARTITION BY multiple columns including NULL")
    if stmt.partition_by and aggregating:
        raise StatementError("PARTITION BY and GROUP BY cannot be combined: GROUP BY already sets the key.")
    if stmt.partition_by and inputs[0].kind == "TABLE" and not stmt.joins:
        raise StatementError("Tables do not support PARTITION BY: a table's key is its PRIMARY KEY "
                             "(GROUP BY makes a table with another key).")
    if ksql_rules and aggregating and not stmt.group_by:
        check_ungrouped_selects(stmt)
        first = next(c for i in stmt.items if isinstance(i, ast.SelectItem) for c in aggregate_calls(i.expr))
        raise StatementError(f"Use of aggregate function {first.name} requires a GROUP BY clause.")
    if stmt.window is not None and not aggregating:
        raise StatementError("A WINDOW clause needs GROUP BY: windows group records by ROWTIME "
                             "for an aggregation.")
    if stmt.having is not None and not aggregating:
        raise StatementError("HAVING requires a GROUP BY clause (or an aggregate in the SELECT list).")
    for index, (join, right) in enumerate(zip(stmt.joins, inputs[1:])):
        if ksql_rules:
            check_join_columns(join, inputs[:index + 2])
            if right.kind == "TABLE" and all(s.kind == "TABLE" for s in inputs[:index + 1]):
                check_table_join_types(join, inputs[:index + 2])
        check_join(join, inputs[0], right, stmt.emit_changes and not diffs, ksql_rules)
    if ksql_rules:
        check_kafka_values(stmt, inputs)


def check_join_sources(inputs: list[Input]) -> None:
    """ksqlDB's analyzer, as it meets the FROM items: no source twice; windowed sources join
    only windowed sources of a compatible kind."""
    seen: dict[str, Input] = {}
    for side in inputs:
        if side.view is None and side.name.upper() in seen:
            raise StatementError(
                f"N-way joins do not support multiple occurrences of the same source. Source: '{side.name}'."
                if len(seen) > 1 else
                f"Can not join '{side.name}' to '{side.name}': self joins are not yet supported.")
        seen[side.name.upper()] = side
    for left, right in zip(inputs, inputs[1:]):
        kinds = [str(s.source.properties.get("WINDOW_TYPE") or "").upper() if _windowed(s) else ""
                 for s in (left, right)]
        if bool(kinds[0]) != bool(kinds[1]):
            raise StatementError(
                f"Can not join windowed source to non-windowed source.\n`{left.qualifiers[0].upper()}` is "
                f"{kinds[0] or 'not'} windowed\n`{right.qualifiers[0].upper()}` is {kinds[1] or 'not'} windowed")
        if kinds[0] and kinds[0] != "SESSION" and kinds[1] != "SESSION" and _window_size(left) != _window_size(right):
            raise StatementError(WINDOWED_REPARTITION)  # their keys differ: one would be re-keyed
        if kinds[0] and (kinds[0] == "SESSION") != (kinds[1] == "SESSION"):
            raise StatementError(
                f"Incompatible windowed sources.\nLeft source: {kinds[0]}\nRight source: {kinds[1]}\nSession windowed "
                "sources can only be joined to other session windowed sources, and may still not result in expected "
                "behaviour as session bounds must be an exact match for the join to work\nHopping and tumbling "
                "windowed sources can only be joined to other hopping and tumbling windowed sources")


def _window_size(side: Input):
    from .windowed_source import window_of

    return window_of(side.source).size


def check_table_join_types(join: ast.Join, inputs: list[Input]) -> None:
    """Two tables join key to key with no re-keying: ksqlDB refuses keys of different types."""
    on = join.on
    if not (isinstance(on, ast.BinaryOp) and on.op == "="
            and all(isinstance(e, ast.ColumnRef) and e.qualifier is not None for e in (on.left, on.right))):
        return
    found = []
    for ref in (on.left, on.right):
        side = next((s for s in inputs if s.view is None and ref.qualifier.lower() in
                     {q.lower() for q in s.qualifiers}), None)
        column = None if side is None else next(
            (c for c in side.source.key_columns if c.name.lower() == ref.name.lower()), None)
        if column is None:
            return
        found.append((f"{ref.qualifier.upper()}.{ref.name.upper()}", display(column.type)))
    if found[0][1] != found[1][1]:
        raise StatementError(f"Invalid join condition: types don't match. Got {found[0][0]}{{{found[0][1]}}} = "
                             f"{found[1][0]}{{{found[1][1]}}}.")


#: ksqlDB's reason why KAFKA values take no part in a join or GROUP BY.
KAFKA_VALUE_LIMITATION = (
    "The KAFKA format is primarily intended for use as a key format. It can be used as a value format, but can not be "
    "used in any operation that requires a repartition or changelog topic.\nRemoving this limitation requires "
    "enhancements to the core of KSQL. This will come in a future release. Until then, avoid using the KAFKA format "
    "for values.\nIf you have an existing topic with KAFKA formatted values you can duplicate the data and serialize "
    "using Avro or JSON with a statement such as: \n\n'CREATE STREAM <new-stream-name> WITH(VALUE_FORMAT='Avro') AS "
    "SELECT * FROM <existing-kafka-formated-stream-name>;'\nFor more info see "
    "https://github.com/confluentinc/ksql/issues/3060")


def check_kafka_values(stmt: ast.Select, inputs: list[Input]) -> None:
    """ksqlDB refuses a join or a GROUP BY over sources whose values are in the KAFKA format."""
    kafka = [s.qualifiers[0].upper() for s in inputs if s.view is None and s.source.value_format.name == "KAFKA"]
    if not kafka or not (stmt.joins or stmt.group_by):
        return
    what = "JOIN" if stmt.joins else "GROUP BY"
    raise StatementError(f"Source(s) {', '.join(kafka)} are using the 'KAFKA' value format. This format does not "
                         f"yet support {what}.\n{KAFKA_VALUE_LIMITATION}")


def check_join_columns(join: ast.Join, inputs: list[Input]) -> None:
    """ksqlDB resolves a join's ON columns before it looks at the join's kind or WITHIN: an
    unknown qualifier (any, first), an unknown column, a column more than one source has."""
    refs = [n for n in ast.walk(join.on) if isinstance(n, ast.ColumnRef)]
    known = {q.lower() for s in inputs for q in s.qualifiers}
    for ref in refs:
        if ref.qualifier is not None and ref.qualifier.lower() not in known:
            raise StatementError(f"Failed to prepare statement: '{ref.qualifier.upper()}' is not a valid "
                                 "stream/table name or alias.")
    for ref in refs:
        if ref.qualifier is not None:
            side = next(s for s in inputs if ref.qualifier.lower() in {q.lower() for q in s.qualifiers})
            if ref.name.lower() not in {c.lower() for c in side.visible}:
                raise StatementError(f"{_at(ref)}JOIN ON column '{ref.qualifier.upper()}.{ref.name.upper()}' "
                                     "cannot be resolved.")
            continue
        having = [s for s in inputs if ref.name.lower() in {c.lower() for c in s.visible}]
        if not having:
            raise StatementError(f"{_at(ref)}JOIN ON column '{ref.name.upper()}' cannot be resolved.")
        if len(having) > 1 and ref.name.upper() not in PSEUDOCOLUMNS:
            sides = " or ".join(f"{s.qualifiers[0].upper()}.{ref.name.upper()}" for s in having)
            raise StatementError(f"Exception while preparing statement: {_at(ref)}Column '{ref.name.upper()}' is "
                                 f"ambiguous. Could be {sides}.")


def _at(ref: ast.ColumnRef) -> str:
    """Where a column is, as ksqlDB's messages about a join's columns open: `Line: 3, Col: 70: `
    (the line in the cell, the column counted from 1)."""
    return f"Line: {ref.line}, Col: {ref.column}: " if ref.line else ""


def check_join(join: ast.Join, left: Input, right: Input, push: bool, ksql_rules: bool) -> None:
    if ksql_rules and isinstance(join.on, ast.And) and all(
            isinstance(side, ast.BinaryOp) and side.op == "=" for side in (join.on.left, join.on.right)):
        raise StatementError(f"Invalid join condition: joins on multiple conditions are not yet supported. "
                             f"Got {render(join.on)}.")
    if ksql_rules and isinstance(join.on, ast.BinaryOp) and join.on.op == "=":
        for operand in (join.on.left, join.on.right):
            if not any(isinstance(n, ast.ColumnRef) for n in ast.walk(operand)):  # ksqlDB's analyzer, before WITHIN
                raise StatementError(
                    f"Invalid comparison expression '{render(operand)}' in join '{render(join.on)}'. Each side of "
                    "the join comparision must contain references from exactly one source.")
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
                             f"Got {left.name} {join.kind} JOIN {right.name}.")
    if pair == "STREAM-STREAM" and join.kind != "INNER" and join.within is None:
        raise StatementError(f"{join.kind} OUTER joins between two streams need WITHIN: an unmatched record is "
                             "emitted once no match can come, when stream time passes its window and grace period.")
    if pair == "STREAM-TABLE" and join.kind not in STREAM_TABLE_JOINS:
        raise StatementError(f"{join.kind} OUTER joins between a stream and a table are not supported: "
                             "use INNER or LEFT JOIN.")


def _pseudocolumns_in(exprs, names) -> list[str]:
    found = {n.name for e in exprs for n in ast.walk(e) if isinstance(n, ast.ColumnRef) and n.name in names}
    return sorted(found, key=list(names).index)


def check_pull(stmt: ast.Select) -> None:
    for clause, present in PULL_CLAUSES:
        if present(stmt):
            raise StatementError(f"Pull queries don't support {clause} clauses.{PULL_QUERY_SYNTAX_HELP}")
    clauses = (("SELECT", [i.expr for i in stmt.items if isinstance(i, ast.SelectItem)]),
               ("WHERE", [stmt.where] if stmt.where is not None else []))
    for clause, exprs in clauses:
        found = _pseudocolumns_in(exprs, PULL_UNSUPPORTED)
        if found:
            raise StatementError(f"Pull queries don't support the following columns in {clause} clauses: "
                                 f"{', '.join(f'`{c}`' for c in found)}\n{PULL_QUERY_SYNTAX_HELP}")


#: COUNT(*) as ksqlDB spells it in messages (it counts ROWTIME).
def _aggregate_text(call: ast.FunctionCall) -> str:
    return f"{call.name}(ROWTIME)" if call.star or not call.args else render(call)


def check_persistent(stmt: ast.Select, kind: str | None = None) -> None:
    """A persistent query's output is a new source: pseudocolumns there need an alias; one
    that aggregates needs GROUP BY. ksqlDB's message lists the calls and names CREATE TABLE
    AS SELECT whatever the statement (CREATE STREAM AS SELECT and INSERT INTO alike): it
    finds the missing key before it compares the result's kind with the statement's. A system
    column (ROWTIME, ROWPARTITION, ROWOFFSET, WINDOWSTART, WINDOWEND) selected under its own name
    is refused first, as ksqlDB's analyzer does while it visits the SELECT list."""
    for item in stmt.items:
        if isinstance(item, ast.SelectItem) and isinstance(item.expr, ast.ColumnRef) \
                and item.expr.name.upper() in RESERVED_COLUMN_NAMES \
                and (item.alias is None and not (item.expr.qualifier and stmt.joins)  # S1.ROWTIME: S1_ROWTIME
                     or item.alias is not None and item.alias.upper() == item.expr.name.upper()):
            raise StatementError(
                f"Reserved column name in select: `{item.expr.name.upper()}`. Please remove or alias the column.")
    check_functions(stmt)
    if not stmt.group_by:
        calls = [c for i in stmt.items if isinstance(i, ast.SelectItem) for c in aggregate_calls(i.expr)]
        if calls:
            check_ungrouped_selects(stmt)
            raise StatementError("CREATE TABLE AS SELECT statement does not support aggregate function "
                                 f"[{', '.join(_aggregate_text(c) for c in calls)}] without a GROUP BY clause.")


def check_result_kind(statement_kind: str, plan) -> None:
    """CREATE STREAM AS SELECT needs a query that produces a stream, CREATE TABLE AS SELECT one
    that produces a table (an aggregation, or tables only), in ksqlDB's words."""
    produces = _produces(plan)
    if produces != statement_kind:
        raise StatementError(f"Invalid result type. Your SELECT query produces a {produces}. "
                             f"Please use CREATE {produces} AS SELECT statement instead.")


def _produces(plan) -> str:
    return "TABLE" if plan.aggregating or all(i.kind == "TABLE" for i in plan.inputs) else "STREAM"


def check_insert_kind(target, plan) -> None:
    """INSERT INTO (a stream: statements/records.py refuses a table) needs a query that produces
    a stream; ksqlDB checks the result's kind before its schema."""
    produces = _produces(plan)
    if produces != "STREAM":
        raise StatementError(f"Incompatible data sink and query result. Data sink ({target.name}) type is "
                             f"K{target.kind} but select query result is K{produces}.")
