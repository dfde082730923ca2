"""Materialize's SUBSCRIBE output: which diffs a SUBSCRIBE's rows become, its WITH options and
the refusals. Pure: no Spark.

Every SUBSCRIBE emits `mz_timestamp`, `mz_diff`, then the columns. How the build makes them
(engine/subscribe/frame_spark.py, then the driver's `diffs.ChangeTracker`):
- APPEND: an append-only relation (records, projected and filtered): +1 per record;
- CHANGELOG: a changelog (ENVELOPE UPSERT, ENVELOPE DEBEZIUM, a table FROM SOURCE, a view over
  one that selects its key): each record replaces its key's row (-1 the old, +1 the new), a
  delete or a row the WHERE clause rejects retracts it;
- AGGREGATE: GROUP BY or a global aggregate: a group's old row -1, its new row +1, per
  micro-batch; a group that goes (or fails HAVING) -1;
- JOIN: a join of two relations (diff_join.rules), whose step emits the diffs itself.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import StatementError
from ...sql import ast
from ..analysis.plan import TABLE, QueryPlan
from ..analysis.row_ids import keyed_by_row_id

APPEND, CHANGELOG, AGGREGATE, JOIN = "APPEND", "CHANGELOG", "AGGREGATE", "JOIN"
#: SUBSCRIBE's WITH options, in Materialize's order.
OPTIONS = ("PROGRESS", "SNAPSHOT")


def subscribed(plan: QueryPlan) -> QueryPlan:
    """The plan of a SUBSCRIBE's query, with how its rows become diffs."""
    return replace(plan, changes=changes_of(plan))


def changes_of(plan: QueryPlan) -> str:
    if plan.diffs:
        return JOIN
    if plan.aggregating:
        return AGGREGATE
    if plan.kind != TABLE:
        return APPEND
    first = plan.inputs[0]
    view = first.view
    if view is not None and view.aggregating:
        raise StatementError(f"SUBSCRIBE over a query of '{first.qualifiers[0]}' is not supported yet: it aggregates; "
                             f"subscribe to the aggregation itself (SUBSCRIBE {first.qualifiers[0]} or "
                             "SUBSCRIBE (SELECT ... GROUP BY ...)).")
    if view is not None and not view.keys and not keyed_by_row_id(view):  # a row id is a key too
        keys = ", ".join(c.name for c in view.source.key_columns)
        raise StatementError(f"SUBSCRIBE over '{first.qualifiers[0]}' needs it to select the key of the changelog it "
                             f"reads ({keys}): its rows are replaced by key.")
    return CHANGELOG


def emits_snapshot(stmt: ast.Subscribe) -> bool:
    """`WITH (SNAPSHOT = false)`: changes only. Other options are refused with Materialize's
    message (an unknown one) or ours (one not built)."""
    seen: set[str] = set()
    snapshot = True
    for option in stmt.options:
        where = f"line {option.line}:{option.column}: " if option.line else ""
        if option.name not in OPTIONS:
            raise StatementError(f"{where}Expected one of {' or '.join(OPTIONS)}, found identifier "
                                 f"\"{option.name.lower()}\"")
        if option.name in seen:
            raise StatementError(f"{where}{option.name} specified more than once")
        seen.add(option.name)
        if option.name == "PROGRESS" and option.value.value:
            raise StatementError(f"{where}SUBSCRIBE WITH (PROGRESS) is not supported yet: rows carry no "
                                 "mz_progressed column.")
        if option.name == "SNAPSHOT":
            snapshot = option.value.value
    return snapshot
