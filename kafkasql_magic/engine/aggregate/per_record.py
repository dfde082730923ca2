"""When an aggregation writes one change per input record, as ksqlDB does with its record cache
off (`cache.max.bytes.buffering` = 0, the setting its query-validation tests run with): a
GROUP BY over one STREAM (no join; no window, or a window without EMIT FINAL),
in a push or persistent query, whose aggregate functions all have an incremental accumulator
(`accumulators.py`), or over one TABLE whose aggregate functions can all take a row back
(engine/table_aggregate). Otherwise, and by default
(ksqlDB's cache on), a micro-batch writes one change per group. Pure: no Spark here.
"""

from __future__ import annotations

from ..analysis.plan import STREAM, QueryPlan
from .accumulators import has_accumulator

#: ksqlDB's property for the record cache's size, under both of its names.
CACHE_PROPERTIES = ("cache.max.bytes.buffering", "ksql.streams.cache.max.bytes.buffering")


def cache_off(settings: dict) -> bool:
    """Whether the session's settings turn ksqlDB's record cache off (a size of 0 bytes)."""
    for name in CACHE_PROPERTIES:
        value = str(settings.get(name, "")).strip()
        if value:
            return value.lstrip("+").isdigit() and int(value) == 0
    return False


def per_record(plan: QueryPlan, settings: dict) -> bool:
    """Whether `plan`'s aggregation emits one change per input record under `settings`."""
    grouping = plan.grouping
    if grouping is None or not cache_off(settings):
        return False
    if plan.retracts:  # over a TABLE: each change of a group (engine/table_aggregate)
        return plan.push and not plan.per_batch
    first = plan.inputs[0]
    windows = grouping.window is None or not plan.statement.emit_final
    return (plan.push and windows and first.kind == STREAM and not plan.statement.joins
            and not plan.retracts and plan.changes is None and not plan.per_batch
            and all(has_accumulator(call.name, len(call.args)) for call in grouping.calls))
