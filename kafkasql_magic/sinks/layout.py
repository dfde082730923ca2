"""The layout of a persistent query's state, kept beside its checkpoint and compared on resume.

Spark checks the schema of the state its stateful steps keep, but not how rows are spread over
groups: a diff join or table join whose rows moved to other hash buckets resumes on its old
state without complaint and emits wrong results. So the first start of a query writes
`layout.json` into its checkpoint (each stateful step's spread, and whether state is kept per
micro-batch beside the checkpoint), and a resume refuses a checkpoint whose layout differs from
what the query builds now. A checkpoint without the file was written before the file existed:
its layout is the one the code had then (`LEGACY`).
"""

from __future__ import annotations

import json
import os

from ..engine.analysis.plan import TABLE, QueryPlan
from ..engine.table_join.kinds import FOREIGN_KEY
from ..engine.diff_join import join_spark as diff_join
from ..engine.stream_join import rules as stream_join
from ..engine.table_join import foreign_key_spark as foreign_key
from ..engine.table_join import state_spark as table_join
from ..errors import StatementError

FILE = "layout.json"
#: The hash buckets a diff join spread its state over before its state was keyed by join key.
LEGACY_DIFF_JOIN_BUCKETS = 64
#: How a SESSION windowed aggregation keeps its sessions: per group key in Spark's keyed state
#: (before, their members on the driver, re-formed per micro-batch: "batch state").
SESSIONS = "open sessions per group key"
#: Spark's error conditions for stateful steps that no longer match their checkpoint's state.
SPARK_STATE_MISMATCHES = (
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION", "STATE_STORE_COLUMN_FAMILY_SCHEMA_INCOMPATIBLE",
    "STATE_STORE_INVALID_CONFIG_AFTER_RESTART", "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY")


def signature(plan: QueryPlan, batch_store: bool, *, legacy: bool = False, sink_step: str | None = None) -> dict:
    """Each stateful step's layout: how many hash buckets (Spark groups) a table join spreads its
    state over, how a diff join keys its state (`diff_join.LAYOUT`), and whether state is kept
    per micro-batch (`batch_store.py`); a SESSION windowed aggregation's step (`SESSIONS`); a
    stream-stream join's (`stream_join.LAYOUT`); a Materialize sink's previous rows per key
    (`sink_step`: engine.api.PREVIOUS_ROWS_LAYOUT, before which they were Parquet frames beside the
    checkpoint, and no step was recorded).
    `legacy`: the layout of a checkpoint written before the layout was recorded (then a diff join
    kept JSON of 64 hash buckets, or of one group when an input was a changelog, a table join JSON
    of 256 hash buckets, or of one group for a foreign-key join (then 64 hash buckets of left keys,
    until its results were put in order: `foreign_key.LAYOUT`; a chain after one, recorded as 1, in
one group until `foreign_key.CHAIN_LAYOUT`), SESSION windows their members
    per micro-batch, and a stream-stream join was Spark's own, with no step recorded)."""
    steps = {}
    if plan.tracks_time and plan.grouping.window.kind == "SESSION":
        if legacy:
            return {"hash buckets": {}, "batch state": True}
        steps["session windows"] = SESSIONS
    if plan.diffs and plan.statement.joins:
        if legacy:
            steps["diff join"] = 1 if any(side.kind == TABLE for side in plan.inputs) else LEGACY_DIFF_JOIN_BUCKETS
        else:
            steps["diff join"] = diff_join.LAYOUT
    if _joins_streams(plan) and not legacy:  # before, Spark's own join, recorded as no step
        steps["stream-stream join"] = stream_join.LAYOUT
    if plan.table_join is not None:
        foreign = plan.table_join == FOREIGN_KEY
        if legacy:  # both tables' rows as JSON in hash buckets, a foreign-key join in one group
            steps["table join"] = 1 if foreign else 256
        elif foreign:  # a foreign-key join of two tables, or a chain starting with one
            steps["table join"] = foreign_key.LAYOUT if len(plan.statement.joins) == 1 else foreign_key.CHAIN_LAYOUT
        else:
            steps["table join"] = table_join.BUCKETS
    if sink_step is not None and not legacy:
        steps["sink's previous rows"] = sink_step
    return {"hash buckets": steps, "batch state": batch_store}


def _joins_streams(plan: QueryPlan) -> bool:
    """Whether the plan joins two streams WITHIN a window in keyed state (engine/stream_join)."""
    return (plan.push and not plan.per_batch and plan.table_join is None and not plan.diffs
            and any(join.within is not None for join in plan.statement.joins))


def has_offsets(checkpoint: str) -> bool:
    """Whether Spark has planned a micro-batch in `checkpoint` (so state may exist)."""
    offsets = os.path.join(checkpoint, "offsets")
    return os.path.isdir(offsets) and bool(os.listdir(offsets))


def check_resume(query_id: str, checkpoint: str, current: dict, legacy: dict) -> None:
    """Refuse to resume from a checkpoint whose state was laid out otherwise; record the layout
    of a checkpoint that has none yet (a new query, or one without a micro-batch so far)."""
    path = os.path.join(checkpoint, FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            stored = json.load(handle)
    elif has_offsets(checkpoint):
        stored = legacy
    else:
        stored = None
    if stored is not None and stored != current:
        raise StatementError(mismatch_message(query_id, checkpoint, differences(stored, current)))
    if not os.path.exists(path):
        record(checkpoint, current)


def record(checkpoint: str, current: dict) -> None:
    os.makedirs(checkpoint, exist_ok=True)
    with open(os.path.join(checkpoint, FILE), "w", encoding="utf-8") as handle:
        json.dump(current, handle, sort_keys=True)


def differences(stored: dict, current: dict) -> list[str]:
    """What changed, in words: `<step>: <then> in the checkpoint, <now> now`."""
    out = []
    then, now = stored.get("hash buckets", {}), current.get("hash buckets", {})
    for step in sorted(set(then) | set(now)):
        if then.get(step) != now.get(step):
            out.append(f"{step}: {_buckets(then.get(step))} in the checkpoint, {_buckets(now.get(step))} now")
    if stored.get("batch state") != current.get("batch state"):
        out.append(f"state kept per micro-batch: {_yes(stored.get('batch state'))} in the checkpoint, "
                   f"{_yes(current.get('batch state'))} now")
    return out or ["the state's layout"]


def mismatch_message(query_id: str, checkpoint: str, changes: list[str]) -> str:
    return (f"Query {query_id} cannot resume from its checkpoint: the layout of its state changed since the "
            f"checkpoint was written ({'; '.join(changes)}). Resuming would join or aggregate new records "
            "against state they cannot meet, and write wrong results. Re-create the query (TERMINATE it, "
            "then run its statement again), or delete its checkpoint to start it afresh: "
            f"{checkpoint} (EXPLAIN {query_id} shows it).")


def spark_mismatch(exc: BaseException) -> str | None:
    """The error condition when Spark refused the checkpoint's state (a stateful step changed)."""
    text = str(exc)
    return next((c for c in SPARK_STATE_MISMATCHES if c in text), None)


def _buckets(count) -> str:
    if count is None:
        return "no such step"
    if isinstance(count, str):  # keyed otherwise than by hash bucket
        return count
    return "one group" if count == 1 else f"{count} hash buckets"


def _yes(flag) -> str:
    return "yes" if flag else "no"
