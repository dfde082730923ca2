"""Persistent queries of a session: start (CSAS, CTAS, INSERT INTO ... SELECT), list, terminate,
and the checks other statements make against them (DROP while a query reads or writes).

The session hands statements here through three calls (`create_as_select`, `insert_select`,
`terminate`); everything else a persistent query needs lives in this package.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pandas as pd

from .. import types
from ..dialects import limits
from ..catalog import SourceDef
from ..engine.analysis.windowed_source import BOUND_COLUMNS, sink_properties, window_of
from ..engine.api import BatchStore
from ..engine.columns import result_column
from ..engine.tree import explain_lines, tree_of
from ..errors import StatementError
from ..formats import Field
from ..kafka import admin
from ..sql import ast
from ..sql.ast_materialize import base_relation
from . import plan as sink_plan
from . import layout, schemas
from .replay import Replay
from .retry import retry_backoff
from .runner import WINDOW_BOUNDS, PersistentQuery, SinkWrite
QUERY_COLUMNS = ["Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String"]
EXTENDED_COLUMNS = ["Records In/s", "Records Out/s", "Records Written", "Consumer Lag", "Processing Log"]


def default_state_dir(cluster: str, service_id: str) -> str:
    """A per-user folder keyed by the Kafka cluster id and the service id."""
    base = os.environ.get("KAFKASQL_STATE_DIR") or os.path.join(Path.home(), ".kafkasql_magic", "state")
    return os.path.join(base, cluster or "unknown-cluster", service_id)


class PersistentQueries:
    def __init__(self, session, state_dir: str | None = None):
        self.session = session
        self._state_dir = state_dir
        self.queries: dict[str, PersistentQuery] = {}
        self._numbers = itertools.count(1)
        self.replay = Replay(session)  # what the command topic restored, and what waits for a secret

    @property
    def state_dir(self) -> str:
        if self._state_dir is None:
            try:
                cluster = admin.cluster_id(self.session.bootstrap_servers)
            except Exception:  # noqa: BLE001 - a folder per session rather than no folder
                cluster = None
            self._state_dir = (default_state_dir(cluster, self.session.settings.get("ksql.service.id", "default_"))
                               if cluster else tempfile.mkdtemp(prefix="kafkasql-state-"))
        return self._state_dir

    # ------------------------------------------------------------ statements
    def create_as_select(self, stmt: ast.CreateAsSelect, text: str, *, resume: bool = False,
                         query_id: str | None = None, start: bool = True) -> PersistentQuery | None:
        """Plan, create the sink (catalog entry, topic, schemas) and start the query; a replay
        passes the logged `query_id`, and `start=False` for a query terminated since."""
        from ..engine.analysis import check_result_kind
        from ..engine.analysis.key_projection import check_key_projected

        catalog = self.session.catalog
        if stmt.name in catalog and not stmt.or_replace:
            if stmt.if_not_exists:
                return None
            existing = catalog.get(stmt.name)
            raise StatementError(f"Cannot add {stmt.kind.lower()} '{stmt.name}': A {existing.kind.lower()} "
                                 "with the same name already exists")
        props = sink_plan.properties(stmt.properties)
        limits.check_properties(props)
        query, prepared, outputs, window, windowing = self._planned(stmt.query, stmt.kind)
        plan = prepared.plan
        leftmost = plan.source
        check_key_projected(stmt.name, plan)
        check_result_kind(stmt.kind, plan)  # after the key check, as in ksqlDB
        settings = self.session.settings
        by_null = stmt.query.partition_by == (ast.Literal(None, "NULL"),)
        try:
            sink = sink_plan.sink_source(stmt.kind, stmt.name, props, outputs, leftmost, settings,
                                         self.session.schema_registry_url, text, partitioned_by_null=by_null)
        except StatementError as exc:  # ksqlDB meets a GROUP BY's key format later, naming the statement
            if plan.grouping is None or not str(exc).startswith("Key format does not support schema."):
                raise
            raise StatementError(f"{exc}\nStatement: {sink_plan.formatted_statement(stmt, plan)}") from None
        if windowing is not None:  # read back one row per key and window
            sink = replace(sink, properties={**sink.properties, **windowing[1]})
        if not start:
            catalog.add(sink, or_replace=True)
            return None
        if stmt.or_replace:
            for running in [q for q in self.queries.values() if q.sink == sink.name]:
                self.terminate(running.id)
        partitions = int(props.get("PARTITIONS") or len(admin.topic_partitions(self.session.bootstrap_servers, leftmost.topic)))
        config = {"cleanup.policy": "compact"} if plan.aggregating else None
        admin.create_topic(self.session.bootstrap_servers, sink.topic, partitions,
                           replication_factor=int(props.get("REPLICAS") or 1), config=config, exist_ok=True)
        registered = {role: schemas.register(self.session.schema_registry_url, sink.topic, fields, spec, role)
                      for role, fields, spec in self._roles(sink, window)}
        query_id = query_id or sink_plan.query_id(stmt.kind, sink.name, next(self._numbers))
        write = SinkWrite(sink, registered, window.get("WINDOWSTART"), tuple(window.values()),
                          props.get("TIMESTAMP"), self.session.bootstrap_servers,
                          session_end=window.get("WINDOWEND") if _is_session(windowing) else None,
                          partitions=self._partition_count(sink.topic) if window else None,
                          in_record_order=prepared.per_record)
        catalog.add(sink, or_replace=stmt.or_replace)
        return self._start(query_id, stmt.kind, text, prepared, write, query, resume)

    def insert_select(self, stmt: ast.InsertSelect, text: str, *, resume: bool = False,
                      query_id: str | None = None) -> PersistentQuery:
        from ..engine.analysis import check_insert_kind
        from ..engine.analysis.key_projection import check_key_projected

        target = sink_plan.insert_target(self.session.catalog, stmt, self.session.dialect_now.name)
        sink_plan.check_insert_select(target)
        query, prepared, outputs, window, windowing = self._planned(stmt.query)
        check_key_projected(target.name, prepared.plan)
        check_insert_kind(target, prepared.plan)
        sink_plan.check_insert(target, outputs)
        registered = {role: schemas.register(self.session.schema_registry_url, target.topic, fields, spec, role)
                      for role, fields, spec in self._roles(target, window)}
        write = SinkWrite(target, registered, window.get("WINDOWSTART"), tuple(window.values()), None,
                          self.session.bootstrap_servers,
                          session_end=window.get("WINDOWEND") if _is_session(windowing) else None,
                          partitions=self._partition_count(target.topic) if window else None,
                          in_record_order=prepared.per_record)
        query_id = query_id or sink_plan.query_id("INSERT", target.name, next(self._numbers))
        return self._start(query_id, "INSERT", text, prepared, write, query, resume)

    def _partition_count(self, topic: str) -> int:
        """The sink topic's partitions as they are (an existing topic keeps its own count)."""
        return len(admin.topic_partitions(self.session.bootstrap_servers, topic))

    def _planned(self, select: ast.Select, kind: str | None = None):
        from ..engine.analysis import check_persistent
        from ..engine.analysis.key_projection import check_key_selected_once
        from ..engine.api import prepare

        check_persistent(select, kind)
        source_window = self._kept_window(select)
        session = select_is_session(select) or (source_window is not None and source_window.kind == "SESSION")
        selected = _window_outputs(select, source_window is not None) if select.window or source_window else {}
        unselected = _unselected_bounds(selected, session) if select.window or source_window else {}
        query = replace(select, emit_changes=True,
                        items=(*select.items, *(ast.SelectItem(ast.ColumnRef(bound), alias)
                                                for bound, alias in unselected.items())))
        prepared = prepare(self.session, query, keep_headers=True, changelog=True, persistent=True)
        plan, planned = prepared.plan, prepared.built.frame
        check_key_selected_once(plan)
        key_names = set(plan.key_names)
        outputs = sink_plan.keys_first([
            sink_plan.Output(name, types.from_spark(planned.schema[result_column(i)].dataType),
                             name in key_names and name not in selected.values())
            for i, name in enumerate(plan.names) if name not in unselected.values()], plan.key_names)
        sink_plan.check_value_columns(outputs)
        if select.window is not None:
            windowing = (select.window.kind, sink_properties(select.window, selected))
        elif source_window is not None:
            windowing = (source_window.kind, _kept_window_properties(plan.source, selected))
        else:
            windowing = None
        return query, prepared, outputs, {**selected, **unselected}, windowing

    def _kept_window(self, select: ast.Select):
        """The window of a windowed source (WITH WINDOW_TYPE, or a windowed table) that a query
        keeps its records in: one that neither aggregates nor joins it writes each record's window
        back into its key, as ksqlDB does ('import tumbling stream')."""
        if select.window is not None or select.group_by or select.joins:
            return None
        relation = self.session.catalog.get(base_relation(select.source))
        return window_of(relation) if isinstance(relation, SourceDef) else None

    @staticmethod
    def _roles(sink, window: dict):
        keys = [Field(c.name, c.type) for c in sink.key_columns]
        values = [Field(c.name, c.type) for c in sink.value_columns if c.name not in window.values()]
        return (("key", keys, sink.key_format), ("value", values, sink.value_format))

    def start(self, kind: str, sink: str, text, prepared, write, query: ast.Select, *, resume: bool = False,
              query_id: str | None = None) -> PersistentQuery:
        """Start a query planned elsewhere (a Materialize sink: `write` makes its records)."""
        query_id = query_id or sink_plan.query_id(kind, sink, next(self._numbers))
        return self._start(query_id, kind, text, prepared, write, query, resume)

    def _start(self, query_id, kind, text, prepared, write, query: ast.Select, resume: bool) -> PersistentQuery:
        checkpoint = os.path.join(self.state_dir, query_id)
        if not resume:
            shutil.rmtree(checkpoint, ignore_errors=True)  # a new query with a reused id starts afresh
        batch_state = prepared.state is not None
        sink_step = None if prepared.plan.per_batch else write.state_step
        layout.check_resume(query_id, checkpoint, layout.signature(prepared.plan, batch_state, sink_step=sink_step),
                            layout.signature(prepared.plan, batch_state, legacy=True))
        sources = [base_relation(query.source)] + [base_relation(j.source) for j in query.joins]
        if prepared.state is not None:  # open windows, stream time, a table's rows survive a restart
            prepared.state.store = BatchStore(os.path.join(checkpoint, "state"))
        frame = prepared.raw if prepared.plan.per_batch else write.keyed(prepared.built.frame, prepared.plan.names)
        running = PersistentQuery(query_id, kind, text, prepared.plan, frame, write, sources=sources,
                                  log=self.session.log, checkpoint=checkpoint,
                                  trigger_interval=self.session.trigger_interval,
                                  build_batch=prepared.build_batch,
                                  backoff=retry_backoff(self.session.settings),
                                  on_stopped=lambda q: self.queries.pop(q.id, None))
        self.queries[query_id] = running.start()
        return running

    # ------------------------------------------------------------ restart
    def restore(self, commands) -> str:
        """Replay the command topic (see `sinks.replay`); what was restored."""
        return self.replay.restore(commands)

    # ------------------------------------------------------------ lifecycle
    def terminate(self, query_id: str | None) -> list[str]:
        """Stop `query_id` (or every persistent query); the ids stopped."""
        ids = list(self.queries) if query_id is None else [query_id]
        for qid in ids:
            query = self.queries.get(qid) or self.queries.get(qid.upper())
            if query is None:
                raise StatementError(f"Unknown queryId: {qid}")
            query.terminate()
        return ids

    def check_drop(self, name: str) -> None:
        """ksqlDB refuses to drop a source that running queries read or write."""
        readers = [q.id for q in self.queries.values() if any(s.upper() == name.upper() for s in q.sources)]
        writers = [q.id for q in self.queries.values() if q.sink.upper() == name.upper()]
        if readers or writers:
            raise StatementError(
                f"Cannot drop {name}.\nThe following queries read from this source: [{', '.join(readers)}].\n"
                f"The following queries write into this source: [{', '.join(writers)}].\n"
                f"You need to terminate them before dropping {name}.")

    def show(self, extended: bool = False) -> pd.DataFrame:
        rows = []
        for q in self.queries.values():
            row = [q.id, "PERSISTENT", q.state, q.sink, q.sink_topic, q.sql]
            if extended:
                s = q.status()
                row += [s.records_in_per_s, s.records_out_per_s, q.records_out, s.lag, s.errors]
            rows.append(row)
        return pd.DataFrame(rows, columns=QUERY_COLUMNS + (EXTENDED_COLUMNS if extended else []))

    def explain(self, query_id: str) -> pd.DataFrame:
        query = self.queries.get(query_id) or self.queries.get(query_id.upper())
        if query is None:
            raise StatementError(f"Query with id:{query_id} does not exist, use SHOW QUERIES to view the full set "
                                 "of running queries.")
        sink = query.write.sink
        rows = [("Query ID", query.id), ("Query Type", "PERSISTENT"), ("Status", query.state),
                ("Query String", query.sql), ("Sources", ", ".join(query.sources)),
                ("Sink", sink.name), ("Sink Kafka Topic", sink.topic),
                ("Formats", f"key {sink.key_format.name}, value {sink.value_format.name}"),
                ("Columns", ", ".join(f"{c.name} {types.display(c.type)}{' KEY' if c.role == 'KEY' else ''}"
                                      for c in sink.columns)),
                ("Operators", "\n".join(explain_lines(tree_of(query.plan), query.plan.dialect))),
                ("Checkpoint", query.checkpoint)]
        return pd.DataFrame(rows, columns=["Property", "Value"])

    def stop_all(self) -> None:
        """Stop the queries (checkpoints stay): the session is closing."""
        for q in list(self.queries.values()):
            q.terminate()


def select_is_session(select: ast.Select) -> bool:
    return select.window is not None and select.window.kind == "SESSION"


def _is_session(windowing) -> bool:
    return windowing is not None and windowing[0] == "SESSION"


def _unselected_bounds(selected: dict[str, str], session: bool) -> dict[str, str]:
    """The window bounds the record key needs that the query does not select -> a hidden output
    column to plan them in: ksqlDB writes the window into the key whether or not it is selected
    (the start; for a session, the end too)."""
    needed = WINDOW_BOUNDS if session else WINDOW_BOUNDS[:1]
    return {bound: f"__KEY_{bound}" for bound in needed if bound not in selected}


def _window_outputs(select: ast.Select, star_has_bounds: bool = False) -> dict[str, str]:
    """WINDOWSTART / WINDOWEND -> the output column selecting it (its alias, or its own name;
    `SELECT *` over a windowed source selects both)."""
    found = {}
    for item in select.items:
        if isinstance(item, ast.Star) and star_has_bounds:
            found.update({bound: bound for bound in WINDOW_BOUNDS if bound not in found})
        if isinstance(item, ast.SelectItem) and isinstance(item.expr, ast.ColumnRef) \
                and item.expr.name.upper() in WINDOW_BOUNDS:
            found[item.expr.name.upper()] = item.alias or item.expr.name.upper()
    return found


def _kept_window_properties(source: SourceDef, selected: dict[str, str]) -> dict[str, str]:
    """A sink that keeps its source's window is windowed as the source is, in its catalog entry."""
    own = {k: v for k, v in source.properties.items() if k in ("WINDOW_TYPE", "WINDOW_SIZE")}
    return {**own, BOUND_COLUMNS: ",".join(f"{column}={bound}" for bound, column in selected.items())}
