"""Which plans read a changelog keyed by hidden row ids (Materialize's writable tables,
dialects/writable_tables.py): the record key is the row's identity, and no column holds it.
Pure: no Spark.

Such a plan's rows keep their record key (`__RAW_KEY`) through the projection, where other
plans keep raw bytes only on failed rows: an UPDATE or DELETE finds the ids of the rows it
changes there, a SUBSCRIBE over a view of the table retracts a row by it, and a sink pairs a
row's old and new values by it.
"""

from __future__ import annotations

from .plan import TABLE


def keyed_by_row_id(plan) -> bool:
    """A writable table read as it is (columns selected, rows filtered), directly or through
    views that do no more: no aggregation, join or diffs."""
    stmt = plan.statement
    if plan.kind != TABLE or plan.aggregating or plan.diffs or plan.table_join is not None or stmt.joins:
        return False
    first = plan.inputs[0]
    if not first.source.keyed or first.source.key_columns:
        return False
    return first.view is None or keyed_by_row_id(first.view)
