"""Session: the programmatic API. The `%%kstream` magic is a thin shell over it.

    s = connect(bootstrap_servers="127.0.0.1:9092")
    s.sql("CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');")
    df = s.sql("SELECT id, v FROM s EMIT CHANGES LIMIT 3;")

A session holds the state statements share (catalog, settings, variables, running queries,
the processing log) and dispatches each statement to its handler (`statements.HANDLERS`).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Callable

import pandas as pd

from . import clientconf, dialects, redact, spark_exit, sql as sqlparse
from .catalog import Catalog, ViewDef
from .engine.columns import DROP, result_column
from .errors import KStreamError, SparkExited, SqlSyntaxError, StatementError
from .kafka import outage
from .kafka.reads import TopicRead
from .kafka.source import NAME as RAW_SOURCE
from .loadgen.counter import FORMAT as LOADGEN_SOURCE
from .results import ProcessingLog
from .runtime import PushQuery
from .sinks.command_log import Command, CommandLog, logged
from .sinks.manager import PersistentQueries
from .sql import ast
from .sql.ast_materialize import CreateSink, base_relation
from .statements import HANDLERS
from .statements.defaults import DEFAULT_SETTINGS
from .statements.notices import notice
from .engine.api import prepare




#: What connect(..., state_dir=...) without a service id says: the checkpoints alone restore nothing.
NO_SERVICE_ID = ("No service_id: nothing is restored from state_dir {0!r}, and statements are not logged, so "
                 "nothing will be restored next time either. The catalog and the persistent queries come back "
                 "from a service's command topic: connect(..., service_id='app', state_dir=...) to keep them "
                 "across restarts.")

#: Statements that start a persistent query: the command topic keeps its id.
PERSISTENT = (ast.CreateAsSelect, ast.InsertSelect, CreateSink)


class Session:
    def __init__(self, bootstrap_servers: str, *, schema_registry_url: str | None = None, spark=None,
                 dialect: str = "ksql", max_rows: int = 20, timeout: float = 60.0,
                 trigger_interval: str = "0.5 seconds", max_records_per_trigger: int = 50_000,
                 persistent_records_per_trigger: int = 500_000, config=None, state_dir: str | None = None,
                 service_id: str | None = None):
        clientconf.configure(bootstrap_servers, schema_registry_url, clientconf.from_argument(config))
        redact.remember_url(schema_registry_url)
        redact.install_log_filter()
        self.bootstrap_servers = bootstrap_servers
        self.schema_registry_url = schema_registry_url
        self.dialect = dialect
        self.max_rows = max_rows
        self.timeout = timeout
        self.trigger_interval = trigger_interval
        self.max_records_per_trigger = max_records_per_trigger
        self.persistent_records_per_trigger = persistent_records_per_trigger  # stateless persistent queries
        self.settings: dict[str, str] = dict(DEFAULT_SETTINGS)
        self.variables: dict[str, str] = {}
        self.catalog = Catalog()
        self.log = ProcessingLog()
        self.queries: dict[str, PushQuery] = {}
        self.dialect_now: dialects.Dialect = dialects.get(dialect)  # the running statement's
        self.text_now: str | None = None  # the text it came from (for carets under errors)
        self.persistent = PersistentQueries(self, state_dir)
        self._state_dir_given = state_dir  # connect()'s: without a service id it restores nothing
        self.sinks: dict = {}  # Materialize's CREATE SINK: name -> statements.sinks.Sink
        #: With a service id, successful DDL and persistent queries go to its command topic.
        self.commands = CommandLog(bootstrap_servers, service_id) if service_id else None
        if service_id:
            self.settings["ksql.service.id"] = service_id
        self._spark = spark
        self._spark_given = spark is not None
        #: In a Jupyter kernel, Spark's own start-up and log lines go to `spark_logs.log_path()` unless True.
        self.show_spark_logs = False
        #: What the notebook shows while a statement runs (set by the magic for one cell, else None):
        #: `query_starting(model)` once a push query is planned (its live model), `spark_starting(since,
        #: background=)` before the Spark session is up and `spark_started()` after, `query_started(query)`
        #: when the push query is about to start.
        self.feedback = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ public API
    @property
    def spark(self):
        with self._lock:
            if self._spark is not None and (code := spark_exit.exit_code(self._spark)) is not None:
                raise self._spark_exited(code)
            if self._spark is None:
                from .spark_logs import starting_spark
                from .sparkenv import background_start, local_spark, running, wait_for_background_start

                since = background_start()  # the extension started Spark when it loaded
                if self.feedback is not None and not running():
                    self.feedback.spark_starting(since or time.monotonic(), background=since is not None)
                wait_for_background_start()
                with starting_spark(show=self.show_spark_logs):  # in a notebook, Spark's logs go to a file
                    self._spark = local_spark()
                if self.feedback is not None:
                    self.feedback.spark_started()
            else:
                from .sparkenv import prepare as prepare_spark

                prepare_spark(self._spark)
            return self._spark

    def sql(self, text: str, *, timeout: float | None = None, dialect: str | None = None,
            on_done: Callable[[str], None] | None = None):
        """Run every statement in `text` in order; return the last one's result.

        `dialect` ("ksql" or "materialize") overrides the session's for this call. `on_done`
        gets the line each statement that succeeded says, if it says one (ksqlDB's CLI messages,
        `statements/notices.py`). When one of several statements fails, its error's `statement`
        is (its number, how many): those before it ran."""
        chosen = dialects.get(dialect or self.dialect)
        result = None
        self.text_now = text
        pieces = self._pieces(text, chosen)
        for number, piece in enumerate(pieces, 1):
            try:
                stmt, body = self._parse(piece, chosen)
                self.dialect_now = chosen
                handler = HANDLERS.get(type(stmt))
                if handler is None:
                    raise StatementError(f"{type(stmt).__name__} statements are not supported yet by kafkasql_magic.")
                said = notice(stmt, self)
                result = handler(self, stmt, body.strip(), timeout)
            except KStreamError as exc:
                if len(pieces) > 1:
                    exc.statement = (number, len(pieces))
                raise
            except Exception as exc:
                if self._spark is None or (code := spark_exit.died(exc, self._spark)) is None:
                    raise
                with self._lock:
                    raise self._spark_exited(code) from None
            self._record(stmt, body.strip(), chosen.name, result)
            if on_done is not None and said:
                on_done(said)
        return result

    def _spark_exited(self, code: int) -> SparkExited:
        """The error that says why Spark's JVM exited, said once: our own session is then
        dropped, and the next statement starts a new one; the caller's is theirs to make again."""
        from .spark_logs import in_a_kernel, log_path

        log = log_path() if in_a_kernel() and not self.show_spark_logs else None
        error = SparkExited(spark_exit.explain(code, spark_exit.process(self._spark).pid, log,
                                               restarts=not self._spark_given))
        if not self._spark_given:
            spark_exit.forget(self._spark)
            self._spark = None
        return error

    def _record(self, stmt, text: str, dialect: str, result) -> None:
        """Append a successful DDL or persistent-query statement to the command topic."""
        if self.commands is None or not logged(stmt):
            return
        query_id = getattr(result, "id", None) if isinstance(stmt, PERSISTENT) else None
        self.commands.append(Command.of(text, dialect, dict(self.settings), query_id))

    def replay(self, stmt, text: str, **resume) -> None:
        """Run a logged statement again (restoring from the command topic); `resume` tells a
        handler that keeps state (a sink, a writable table) to take it up where it was."""
        HANDLERS[type(stmt)](self, stmt, text, None, **resume)

    def restore(self) -> str | None:
        """Replay the command topic (at connect); what was restored. Without a service id there
        is no command topic: a `state_dir` alone then restores nothing, and says so."""
        if self.commands is None:
            return NO_SERVICE_ID.format(self._state_dir_given) if self._state_dir_given else None
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

        chosen = dialects.get(dialect or self.dialect)
        (stmt, _), *more = self._statements(text, chosen)
        if more or not isinstance(stmt, ast.Select):
            raise StatementError("dataframe() takes one SELECT statement.")
        self.dialect_now = chosen
        prepared = prepare(self, stmt)
        result = prepared.built.frame.where(~F.col(DROP)).select(
            *[F.col(result_column(i)).alias(n) for i, n in enumerate(prepared.plan.names)])
        return result.limit(stmt.limit) if stmt.limit is not None and not stmt.emit_changes else result

    def processing_log(self, *, raw: bool = False, query: str | None = None) -> pd.DataFrame:
        """Record-level errors: time, query, source, topic, partition, offset, message (and raw bytes)."""
        return self.log.to_pandas(raw=raw, query=query)

    def stop(self) -> None:
        """Stop every running query of this session."""
        for q in list(self.queries.values()):
            q.stop()
        self.persistent.stop_all()

    # ------------------------------------------------------------ for the statement handlers
    def _pieces(self, text: str, dialect: dialects.Dialect) -> list:
        try:
            return sqlparse.split_statements(text)
        except SqlSyntaxError as e:
            raise e.headed(dialect.parser.syntax_headline) from None

    def _parse(self, piece, dialect: dialects.Dialect):
        """(statement, its text after variable substitution): parsed one at a time, when its turn
        comes (a DEFINE changes what the next statement reads)."""
        body = sqlparse.substitute_variables(piece.text, self.variables, line=piece.line, column=piece.column)
        return dialect.parser.parse_statement(body, line=piece.line, column=piece.column), body

    def _statements(self, text: str, dialect: dialects.Dialect):
        """(statement, its text) per statement of `text`."""
        for piece in self._pieces(text, dialect):
            yield self._parse(piece, dialect)

    def next_id(self) -> int:
        return next(self._ids)

    def infer(self, topic, key_format, value_format, key_schema_id, value_schema_id):
        """The registry's columns for a CREATE that declares none (injected into the dialects)."""
        from .registry import inference

        if not self.schema_registry_url:
            raise StatementError(
                f"Inferring the columns of topic '{topic}' needs a Schema Registry: "
                "connect(..., schema_registry_url=...) or %%kstream --registry URL")
        return inference.infer(self.schema_registry_url, topic, key_format=key_format, value_format=value_format,
                               key_schema_id=None if key_schema_id is None else int(key_schema_id),
                               value_schema_id=None if value_schema_id is None else int(value_schema_id))

    def raw_frame(self, read: TopicRead):
        """The raw Kafka records `read` describes: a stream, or a bounded read of the topic as it
        is now (a table joined to a stream is read so, afresh for every micro-batch)."""
        reader = self.spark.readStream if read.streaming else self.spark.read
        if read.generator is not None:  # a load generator's records, made by its own source
            return reader.format(LOADGEN_SOURCE).options(**read.options()).load()
        return reader.format(RAW_SOURCE).options(**self.source_options(read)).load()

    def source_options(self, read: TopicRead) -> dict[str, str]:
        """The Kafka source's options for `read`: offsets, and the client properties (SASL, SSL)
        the consumers on the executors need."""
        options = {**read.options(), **clientconf.source_options(read.bootstrap)}
        if outage.PROPERTY in self.settings:
            options[outage.OPTION] = self.settings[outage.PROPERTY]
        return options

    def use_registry(self, url: str | None) -> None:
        """Point later statements at the Schema Registry at `url` (credentials in it are masked)."""
        redact.remember_url(url)
        self.schema_registry_url = url

    def timeout_of(self, timeout: float | None) -> float:
        """A statement's timeout: the one given to sql(), else the session's."""
        return timeout if timeout is not None else self.timeout

    def base_source(self, name: str):
        """The Kafka-backed source under `name`, through any views."""
        relation = self.catalog.get(name)
        return self.base_source(base_relation(relation.query.source)) if isinstance(relation, ViewDef) else relation


def connect(bootstrap_servers: str, *, schema_registry_url: str | None = None, spark=None,
            dialect: str = "ksql", config=None, **options) -> Session:
    """A session over a Kafka cluster; Spark starts on first use if none is given. `config`:
    client properties (librdkafka and Schema Registry client: SASL, SSL, auth) as a dict or
    the path of a Kafka-style properties file. With `service_id`, the session replays that
    service's command topic first (the catalog and the persistent queries still running) and
    says what it restored; `state_dir` holds the persistent queries' checkpoints (without a
    service id it restores nothing, and says so)."""
    session = Session(bootstrap_servers, schema_registry_url=schema_registry_url, spark=spark,
                      dialect=dialect, config=config, **options)
    restored = session.restore()
    if restored:
        print(restored)
    return session


__all__ = ["Session", "connect", "KStreamError"]
