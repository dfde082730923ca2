"""Session: the programmatic API. The `%%kstream` magic is a thin shell over it.

    s = connect(bootstrap_servers="127.0.0.1:9092")
    s.sql("CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');")
    df = s.sql("SELECT id, v FROM s EMIT CHANGES LIMIT 3;")
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace

import pandas as pd

import json

from . import ddl, dml, metadata, mz, sql as sqlparse, types
from .catalog import Catalog, ViewDef
from .errors import KStreamError, StatementError
from .kafka import admin, peek
from .local.producer import produce
from .planner import plan_select, select_over_frame
from .runtime import ProcessingLog, PushQuery, collect_bounded, to_pandas
from .seek import Seek, seek_of
from .sinks.command_log import LOGGED, Command, CommandLog
from .sinks.manager import PersistentQueries
from .sinks.schemas import delete_subjects
from .sql import ast
from .sql.render import render

#: ksqlDB properties with their defaults (SET / UNSET change them per session).
DEFAULT_SETTINGS = {
    "auto.offset.reset": "latest",
    ddl.DEFAULT_KEY_FORMAT: "KAFKA",
}

RAW_SOURCE = "kafkasql"
PROCESSING_LOG = "KSQL_PROCESSING_LOG"
PROCESSING_LOG_SCHEMA = ("TIME timestamp, QUERY string, SOURCE string, TOPIC string, PARTITION int, "
                         "OFFSET bigint, MESSAGE string, KEY binary, VALUE binary")


class Session:
    def __init__(self, bootstrap_servers: str, *, schema_registry_url: str | None = None, spark=None,
                 dialect: str = "ksql", max_rows: int = 20, timeout: float = 60.0,
                 trigger_interval: str = "0.5 seconds", max_records_per_trigger: int = 50_000,
                 state_dir: str | None = None, service_id: str | None = None):
        self.bootstrap_servers = bootstrap_servers
        self.schema_registry_url = schema_registry_url
        self.dialect = dialect
        self.max_rows = max_rows
        self.timeout = timeout
        self.trigger_interval = trigger_interval
        self.max_records_per_trigger = max_records_per_trigger
        self.settings: dict[str, str] = dict(DEFAULT_SETTINGS)
        self.variables: dict[str, str] = {}
        self.catalog = Catalog()
        self.log = ProcessingLog()
        self.queries: dict[str, PushQuery] = {}
        self._spark = spark
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._dialect_now = dialect
        self.persistent = PersistentQueries(self, state_dir)
        #: With a service id, successful DDL and persistent queries go to its command topic.
        self.commands = CommandLog(bootstrap_servers, service_id) if service_id else None
        if service_id:
            self.settings["ksql.service.id"] = service_id
        self._handlers = {
            ast.CreateSource: self._create_source,
            ast.Select: self._select,
            ast.Describe: self._describe,
            ast.Show: self._show,
            ast.Drop: self._drop,
            ast.Print: self._print,
            ast.SetProperty: self._set,
            ast.UnsetProperty: self._unset,
            ast.Define: self._define,
            ast.Undefine: self._undefine,
            ast.TerminateQuery: self._terminate,
            ast.InsertValues: self._insert_values,
            ast.InsertSelect: self._insert_select,
            ast.CreateAsSelect: self._create_as_select,
            ast.Explain: self._explain,
            ast.ExplainQuery: lambda stmt, text, timeout: self.persistent.explain(stmt.query_id),
            ast.CreateKafkaSource: self._create_kafka_source,
            ast.CreateView: self._create_view,
            ast.Subscribe: self._subscribe,
        }

    # ------------------------------------------------------------ public API
    @property
    def spark(self):
        with self._lock:
            if self._spark is None:
                from .sparkenv import local_spark

                self._spark = local_spark()
            else:
                from .sparkenv import prepare

                prepare(self._spark)
            return self._spark

    def sql(self, text: str, *, timeout: float | None = None, dialect: str | None = None):
        """Run every statement in `text` in order; return the last one's result.

        `dialect` ("ksql" or "materialize") overrides the session's for this call."""
        dialect = sqlparse.get_dialect(dialect or self.dialect).name
        result = None
        for piece in sqlparse.split_statements(text):
            body = sqlparse.substitute_variables(piece.text, self.variables, line=piece.line, column=piece.column)
            stmt = sqlparse.parse_statement(body, line=piece.line, column=piece.column, dialect=dialect)
            self._dialect_now = dialect
            result = self._handlers.get(type(stmt), self._unsupported)(stmt, body.strip(), timeout)
            self._record(stmt, body.strip(), dialect, result)
        return result

    def _record(self, stmt, text: str, dialect: str, result) -> None:
        """Append a successful DDL or persistent-query statement to the command topic."""
        if self.commands is None or not isinstance(stmt, LOGGED):
            return
        query_id = getattr(result, "id", None) if isinstance(stmt, (ast.CreateAsSelect, ast.InsertSelect)) else None
        self.commands.append(Command(text, dialect, dict(self.settings), query_id))

    def replay(self, stmt, text: str) -> None:
        """Run a logged DDL statement again (restoring from the command topic)."""
        self._handlers[type(stmt)](stmt, text, None)

    def restore(self) -> str | None:
        """Replay the command topic (at connect); what was restored, or None without a service id."""
        if self.commands is None:
            return None
        self.commands.ensure()
        commands = self.commands.read()
        return self.persistent.restore(commands) if commands else None

    def dataframe(self, text: str, *, dialect: str | None = None):
        """The Spark DataFrame of one SELECT, to go on in PySpark: streaming with EMIT CHANGES,
        a bounded read without; columns named as `sql()` names them. Records that fail to
        decode are left out (only `sql()` records them in the processing log). A GROUP BY
        frame needs the "update" output mode; a stream-table join here reads each table once,
        when the stream starts (`sql()` reads it afresh for every micro-batch)."""
        from pyspark.sql import functions as F

        from .logical import DROP

        dialect = sqlparse.get_dialect(dialect or self.dialect).name
        (piece,) = sqlparse.split_statements(text)
        body = sqlparse.substitute_variables(piece.text, self.variables, line=piece.line, column=piece.column)
        stmt = sqlparse.parse_statement(body, line=piece.line, column=piece.column, dialect=dialect)
        if not isinstance(stmt, ast.Select):
            raise StatementError("dataframe() takes one SELECT statement.")
        self._dialect_now = dialect
        plan, planned, *_ = self._plan(stmt)
        result = planned.where(~F.col(DROP)).select(*[F.col(f"_c{i}").alias(n) for i, n in enumerate(plan.names)])
        return result.limit(stmt.limit) if stmt.limit is not None and not stmt.emit_changes else result

    def processing_log(self, *, raw: bool = False, query: str | None = None) -> pd.DataFrame:
        """Record-level errors: time, query, source, topic, partition, offset, message (and raw bytes)."""
        return self.log.to_pandas(raw=raw, query=query)

    def stop(self) -> None:
        """Stop every running query of this session."""
        for q in list(self.queries.values()):
            q.stop()
        self.persistent.stop_all()

    # ------------------------------------------------------------ statements
    def _unsupported(self, stmt, text, timeout):
        raise StatementError(f"{type(stmt).__name__} statements are not supported yet by kafkasql_magic.")

    def _create_source(self, stmt: ast.CreateSource, text, timeout):
        settings = {**self.settings, ddl.SCHEMA_REGISTRY_URL: self.schema_registry_url}
        source = ddl.source_from_create(stmt, settings, text, infer=self._infer)
        if source.name in self.catalog and stmt.if_not_exists:
            return None
        if not admin.topic_exists(self.bootstrap_servers, source.topic):
            partitions = source.properties.get("PARTITIONS")
            if partitions is None:
                raise StatementError(
                    f"Topic '{source.topic}' does not exist. If you want to create a new topic for the "
                    f"{stmt.kind.lower()} please re-run the statement providing the required 'PARTITIONS' "
                    "configuration in the WITH clause (and optionally 'REPLICAS')."
                )
            admin.create_topic(self.bootstrap_servers, source.topic, partitions=int(partitions))
        self.catalog.add(source, or_replace=stmt.or_replace, if_not_exists=stmt.if_not_exists)
        return None

    def _infer(self, topic, key_format, value_format, key_schema_id, value_schema_id):
        from .registry import inference

        if not self.schema_registry_url:
            raise StatementError(
                f"Inferring the columns of topic '{topic}' needs a Schema Registry: "
                "connect(..., schema_registry_url=...) or %%kstream --registry URL")
        return inference.infer(self.schema_registry_url, topic, key_format=key_format, value_format=value_format,
                               key_schema_id=None if key_schema_id is None else int(key_schema_id),
                               value_schema_id=None if value_schema_id is None else int(value_schema_id))

    def _raw_options(self, topic: str, *, bounded: bool, seek: Seek = Seek(),
                     bootstrap: str | None = None, reset: str | None = None) -> dict[str, str]:
        options = {"bootstrap.servers": bootstrap or self.bootstrap_servers, "topic": topic}
        if bounded:
            options.update(startingOffsets="earliest", endingOffsets="latest")
            return options
        reset = (reset or self.settings.get("auto.offset.reset", "latest")).lower()
        if reset not in ("earliest", "latest"):
            raise StatementError(f"Invalid value for 'auto.offset.reset': '{reset}' (earliest or latest)")
        options.update(startingOffsets=reset, maxRecordsPerTrigger=str(self.max_records_per_trigger))
        if not seek.narrows:
            return options
        parts = sorted(seek.partitions) if seek.partitions is not None else \
            admin.topic_partitions(self.bootstrap_servers, topic)
        options["partitions"] = ",".join(map(str, parts))
        if seek.rowtime_from is not None:
            start = admin.offsets_for_time(self.bootstrap_servers, topic, parts, seek.rowtime_from)
            if seek.offset_from is not None:
                start = {p: max(o, seek.offset_from) for p, o in start.items()}
            options["startingOffsets"] = json.dumps({str(p): o for p, o in start.items()})
        elif seek.offset_from is not None:
            options["startingOffsets"] = json.dumps({str(p): seek.offset_from for p in parts})
        if seek.offset_to is not None:
            options["endingOffsets"] = json.dumps({str(p): seek.offset_to for p in parts})
        return options

    def _plan(self, stmt: ast.Select, reset: str | None = None, keep_headers: bool = False):
        """The plan, the planned frame, the ranges a push query reads, its raw-source options and
        the raw records (which a per-batch plan builds on, micro-batch by micro-batch)."""
        source = self._base_source(stmt.source.name)
        bounded = not stmt.emit_changes
        seekable = stmt.emit_changes and source.dialect == "ksql" and not stmt.joins
        seek = seek_of(stmt.where) if seekable else Seek()
        options = (self._raw_options(source.topic, bounded=bounded, seek=seek,
                                     bootstrap=source.properties.get("BROKER"), reset=reset)
                   if not seek.empty else self._raw_options(source.topic, bounded=True,
                                                            bootstrap=source.properties.get("BROKER")))
        raw = self._raw_reader(source, options, streaming=not bounded, keep_headers=keep_headers)

        def raw_for(joined, streaming: bool):
            joined_options = self._raw_options(joined.topic, bounded=not streaming, reset=reset,
                                               bootstrap=joined.properties.get("BROKER"))
            return self._raw_reader(joined, joined_options, streaming=streaming, keep_headers=keep_headers)

        plan = _analysed(lambda: plan_select(stmt, self.catalog, raw, dialect=self._dialect_now, raw_for=raw_for))
        return plan, _analysed(lambda: plan.build(raw)), seek, options, raw

    def _raw_reader(self, source, options: dict[str, str], *, streaming: bool, keep_headers: bool = False):
        """The raw Kafka records of `source`: a stream, or a bounded read of the topic as it is now
        (a table joined to a stream is read so, afresh for every micro-batch)."""
        if not source.header_columns and not keep_headers:  # converting headers is the reader's costliest step
            options = {**options, "includeHeaders": "false"}
        reader = self.spark.readStream if streaming else self.spark.read
        return reader.format(RAW_SOURCE).options(**options).load()

    def _base_source(self, name: str):
        """The Kafka-backed source under `name`, through any views."""
        relation = self.catalog.get(name)
        return self._base_source(relation.query.source.name) if isinstance(relation, ViewDef) else relation

    def _select(self, stmt: ast.Select, text, timeout, reset: str | None = None):
        if stmt.source.name == PROCESSING_LOG:
            return self._select_processing_log(stmt)
        plan, planned, seek, options, raw = self._plan(stmt, reset)
        query_id = f"transient_{plan.source.name}_{next(self._ids)}"
        if seek.empty:  # contradictory bounds: nothing can match
            return to_pandas([], plan.names)
        if not stmt.emit_changes:
            return collect_bounded(planned, plan, query_id=query_id, log=self.log)
        ending = json.loads(options["endingOffsets"]) if "endingOffsets" in options else None
        query = PushQuery(plan, raw if plan.per_batch else planned, query_id=query_id, sql=text, log=self.log, max_rows=self.max_rows,
                          trigger_interval=self.trigger_interval, ending_offsets=ending)
        self.queries[query_id] = query.start()
        if plan.limit is None:
            return query
        try:
            return query.result(timeout if timeout is not None else self.timeout)
        finally:
            self.queries.pop(query_id, None)

    def _select_processing_log(self, stmt: ast.Select):
        """`SELECT ... FROM KSQL_PROCESSING_LOG`: the session's record-level errors, queried in SQL."""
        if stmt.emit_changes:
            raise StatementError(f"{PROCESSING_LOG} can be queried as a snapshot only (no EMIT CHANGES).")
        log = self.log.to_pandas(raw=True)
        frame = self.spark.createDataFrame(log, schema=PROCESSING_LOG_SCHEMA)
        names, result = _analysed(lambda: select_over_frame(stmt, frame, PROCESSING_LOG))
        table = result.toArrow()
        return to_pandas(list(zip(*(table.column(i).to_pylist() for i in range(len(names))))), names)

    def _explain(self, stmt: ast.Explain, text, timeout):
        inner = stmt.statement
        if not isinstance(inner, ast.Select):
            raise StatementError("EXPLAIN supports queries (SELECT) only.")
        plan, planned, seek, options, _ = self._plan(inner)
        reads = "nothing (the WHERE clause cannot match)" if seek.empty else \
            seek.describe() if seek.narrows else ("the whole topic, as it is now" if not inner.emit_changes
                                                  else f"all partitions from the {options['startingOffsets']} offsets")
        rows = [("Query", text[len("EXPLAIN"):].strip()), ("Source", f"{plan.source.kind} {plan.source.name}"),
                ("Topic", plan.source.topic),
                ("Formats", f"key {plan.source.key_format.name}, value {plan.source.value_format.name}"),
                ("Reads", reads), ("Columns", ", ".join(plan.names))]
        if inner.joins:
            rows.append(("Joins", "; ".join(_join_text(j) for j in inner.joins) + (
                " (each table read afresh for every micro-batch)" if plan.per_batch else "")))
        if plan.aggregating:
            keys = ", ".join(render(e) for e in inner.group_by) or "(all rows)"
            rows.append(("Aggregation", f"GROUP BY {keys}; a changelog keyed by {', '.join(plan.key_names) or 'nothing'}"))
        if options and "endingOffsets" in options:
            rows.append(("Offset ranges", f"start {options['startingOffsets']}, end {options['endingOffsets']} (exclusive)"))
        return pd.DataFrame(rows, columns=["Property", "Value"])

    def _insert_values(self, stmt: ast.InsertValues, text, timeout):
        target = self.catalog.get(stmt.target)
        record = dml.record_from_insert(stmt, target)
        produce(self.bootstrap_servers, target.topic, [record])
        return None

    def _insert_select(self, stmt: ast.InsertSelect, text, timeout):
        return self.persistent.insert_select(stmt, text)

    def _create_as_select(self, stmt: ast.CreateAsSelect, text, timeout):
        return self.persistent.create_as_select(stmt, text)

    def _create_kafka_source(self, stmt: ast.CreateKafkaSource, text, timeout):
        if stmt.if_not_exists and stmt.name in self.catalog:
            return None
        source = mz.source_from_create(stmt, registry_url=self.schema_registry_url, text=text)
        bootstrap = source.properties.get("BROKER") or self.bootstrap_servers
        if not admin.topic_exists(bootstrap, source.topic):
            raise StatementError(f"Topic '{source.topic}' does not exist (broker {bootstrap}).")
        self.catalog.add(source)
        return None

    def _create_view(self, stmt: ast.CreateView, text, timeout):
        self._base_source(stmt.query.source.name)  # the view must read an existing source
        view = ViewDef(stmt.name, stmt.query, statement=text, dialect=self._dialect_now)
        self.catalog.add(view, or_replace=stmt.or_replace, if_not_exists=stmt.if_not_exists)
        return None

    def _subscribe(self, stmt: ast.Subscribe, text, timeout):
        """Materialize's SUBSCRIBE: the current rows, then every change (it starts at the earliest
        offsets whatever 'auto.offset.reset' says, as Materialize emits the snapshot first)."""
        query = stmt.query or ast.Select(items=(ast.Star(),), source=ast.SourceRef(stmt.name))
        return self._select(replace(query, emit_changes=True), text, timeout, reset="earliest")

    def _describe(self, stmt: ast.Describe, text, timeout):
        relation = self.catalog.get(stmt.name)
        if not isinstance(relation, ViewDef):
            return metadata.describe(relation)
        plan, planned, *_ = self._plan(ast.Select(items=(ast.Star(),), source=ast.SourceRef(relation.name)))
        return metadata.describe_columns(relation.name, [
            (n, types.display(types.from_spark(planned.schema[f"_c{i}"].dataType))) for i, n in enumerate(plan.names)])

    def _show(self, stmt: ast.Show, text, timeout):
        what = stmt.what
        if what in ("STREAMS", "TABLES"):
            return metadata.show_sources(self.catalog, what[:-1])
        if what in ("SOURCES", "VIEWS"):
            return metadata.show_relations(self.catalog, what[:-1])
        if what == "TOPICS":
            return metadata.show_topics([(t.name, t.partitions) for t in admin.list_topics(self.bootstrap_servers)])
        if what == "QUERIES":
            persistent = self.persistent.show(extended=stmt.extended)
            if not self.queries:
                return persistent
            return pd.concat([persistent, metadata.show_queries(list(self.queries.values()))], ignore_index=True)
        if what == "PROPERTIES":
            return metadata.show_properties(self.settings)
        if what == "VARIABLES":
            return metadata.show_variables(self.variables)
        raise StatementError(f"SHOW {what} is not supported.")

    def _drop(self, stmt: ast.Drop, text, timeout):
        if stmt.name in self.catalog:
            self.persistent.check_drop(self.catalog.get(stmt.name).name)
        source = self.catalog.drop(stmt.kind, stmt.name, if_exists=stmt.if_exists)
        if source is not None and stmt.delete_topic:
            admin.delete_topic(self.bootstrap_servers, source.topic)
            delete_subjects(self.schema_registry_url, source.topic)
        return None

    def _print(self, stmt: ast.Print, text, timeout):
        limit = stmt.limit if stmt.limit is not None else (None if stmt.from_beginning else 100)
        records = peek.fetch_records(
            self.bootstrap_servers, stmt.topic, from_beginning=stmt.from_beginning,
            limit=limit, timeout_s=timeout if timeout is not None else (5.0 if limit is None else self.timeout),
        )
        if stmt.interval:
            records = records[:: stmt.interval]
        return metadata.print_records(records)

    def _set(self, stmt: ast.SetProperty, text, timeout):
        self.settings[stmt.name] = stmt.value
        return None

    def _unset(self, stmt: ast.UnsetProperty, text, timeout):
        self.settings.pop(stmt.name, None)
        if stmt.name in DEFAULT_SETTINGS:
            self.settings[stmt.name] = DEFAULT_SETTINGS[stmt.name]
        return None

    def _define(self, stmt: ast.Define, text, timeout):
        self.variables[stmt.name.lower()] = stmt.value
        return None

    def _undefine(self, stmt: ast.Undefine, text, timeout):
        self.variables.pop(stmt.name.lower(), None)
        return None

    def _terminate(self, stmt: ast.TerminateQuery, text, timeout):
        if stmt.query_id is None:
            self.persistent.terminate(None)
        elif stmt.query_id not in self.queries:
            self.persistent.terminate(stmt.query_id)
            return None
        targets = list(self.queries) if stmt.query_id is None else [stmt.query_id]
        for query_id in targets:
            query = self.queries.pop(query_id, None)
            if query is None:
                raise StatementError(f"Unknown queryId: {query_id}")
            query.stop()
        return None


def _join_text(join: ast.Join) -> str:
    window = f" WITHIN ({join.within[0]} ms, {join.within[1]} ms)" if join.within else ""
    return f"{join.kind} JOIN {join.source.name}{window} ON {render(join.on)}"


def _analysed(build):
    """Run a planning step, turning Spark's analysis errors into user errors."""
    from pyspark.errors import AnalysisException

    try:
        return build()
    except AnalysisException as exc:
        raise StatementError(str(exc).splitlines()[0]) from None


def connect(bootstrap_servers: str, *, schema_registry_url: str | None = None, spark=None,
            dialect: str = "ksql", **options) -> Session:
    """A session over a Kafka cluster; Spark starts on first use if none is given. With
    `service_id`, the session replays that service's command topic first (the catalog and the
    persistent queries still running) and says what it restored."""
    session = Session(bootstrap_servers, schema_registry_url=schema_registry_url, spark=spark,
                      dialect=dialect, **options)
    restored = session.restore()
    if restored:
        print(restored)
    return session


__all__ = ["Session", "connect", "KStreamError"]
