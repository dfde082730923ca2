"""The `%%kstream` and `%kstream_local` magics: a thin shell over `Session`.

The only module that imports IPython. SQL errors are shown as their own class (`StatementError`,
`SqlSyntaxError`, ...) and message, without a traceback; a misused magic (an unknown option) is a
`UsageError`; internal errors keep their traceback. Options are declared with IPython's
`magic_arguments`, so the usage text is generated from them; settings (`%config KStreamMagics.*` and the cell's options)
are read again for every cell, as JupySQL does.
"""

from __future__ import annotations

import os
import re
import shlex
import textwrap
from pathlib import Path

import pandas as pd
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Any, Bool, Float, Int, Unicode

from . import clientconf, pyvars
from .dialects import DIALECTS
from .errors import KStreamError
from .live.chart import ChartError
from .live.feedback import CellFeedback
from .live.result import result_frame
from .magic_line import LineError, split_line
from .session import Session

_sessions: dict[str, Session] = {}
#: bootstrap -> (registry URL, kafka_config) last given to its clients
_configured: dict[str, tuple] = {}


_POSITION = re.compile(r"line (\d+):(\d+)")


def with_caret(message: str, text: str) -> str:
    """A message naming `line L:C` of `text` gets that line and a caret under the column, as
    syntax errors already have."""
    match = _POSITION.search(message)
    lines = text.split("\n")
    if "^" in message or not match or not 1 <= int(match.group(1)) <= len(lines):
        return message
    line, column = int(match.group(1)), int(match.group(2))
    return f"{message}\n{lines[line - 1]}\n{' ' * (column - 1)}^"


def usage(doc: str) -> str:
    """The manual as `--help` prints it. IPython's `magic_arguments` puts the usage line under a
    reStructuredText `::` line (for `%kstream?`), which means nothing on a terminal."""
    head, blank, rest = doc.partition("\n\n")
    if head.strip() != "::":
        return doc
    line, blank, rest = rest.partition("\n\n")
    return textwrap.dedent(line) + blank + rest


def _display_live(query, handle):
    """Beside a push query's live widget (on show since the query was planned, `handle` its
    display), its saved copy: the latest state as static HTML, refreshed every few seconds, which
    a notebook saved while the query runs keeps (the widget hides it while on the page). When the
    query ends, its final state takes the widget's place and the copy goes; both draw its chart."""
    from IPython.display import display

    from .live.static import FinalState, SavedCopy

    copy = SavedCopy(query.model, query.view.token, lambda data: saved.update(data, raw=True), chart=query.chart)
    saved = display(copy.bundle(), raw=True, display_id=True)

    def ended(snapshot) -> None:
        if snapshot.terminal:
            query.model.unsubscribe(ended)
            handle.update(FinalState(snapshot, query.chart))
            copy.close()

    query.model.subscribe(ended)
    copy.start()
    if query.model.snapshot().terminal:  # it may have ended before we subscribed
        ended(query.model.snapshot())
    return handle


def _running_push_query(result) -> bool:
    return hasattr(result, "model") and result.is_active


def _display_card(session: Session, query):
    """A persistent query's card, kept current until the query ends. Terminate runs TERMINATE
    through the session, so the command topic records it as any TERMINATE statement."""
    from IPython.display import display

    from .live.query_card import QueryCard, QueryCardModel, follow

    model = QueryCardModel(query.id, sink_topic=query.sink_topic)

    def terminate() -> None:
        try:
            session.sql(f"TERMINATE {query.id};")
        except KStreamError as exc:
            model.update(message=str(exc))

    card = QueryCard(model, on_terminate=terminate)
    follow(model, query.status)
    display(card)
    return card


def stop_all() -> None:
    for session in _sessions.values():
        session.stop()


@magics_class
class KStreamMagics(Magics):
    """The `%%kstream` magic; `%%kstream?` shows its manual."""

    bootstrap_servers = Unicode(None, allow_none=True, help="Kafka bootstrap servers").tag(config=True)
    schema_registry_url = Unicode(None, allow_none=True, help="Schema Registry URL").tag(config=True)
    dialect = Unicode("ksql", help="Default SQL dialect: ksql or materialize").tag(config=True)
    kafka_config = Any(None, allow_none=True,
                       help="Client properties (SASL, SSL, registry auth): a dict or a properties file's path"
                       ).tag(config=True)
    max_rows = Int(20, help="Rows shown by the live widget").tag(config=True)
    timeout = Float(60.0, help="Seconds a LIMIT push query waits for its rows").tag(config=True)
    trigger_interval = Unicode("0.5 seconds", help="Micro-batch interval of push queries").tag(config=True)
    show_spark_logs = Bool(False, help="Show Spark's own log lines (JVM warnings, log4j) in the notebook; "
                                       "otherwise they go to a log file").tag(config=True)
    start_spark_on_load = Bool(True, help="In a Jupyter kernel, start Spark in the background when the extension "
                                          "loads, so the first query waits less (set it in an IPython config file, "
                                          "or on get_ipython().config before %load_ext)").tag(config=True)
    default_key_format = Unicode(None, allow_none=True,
                                 help="ksql.persistence.default.format.key for new sessions").tag(config=True)
    default_value_format = Unicode(None, allow_none=True,
                                   help="ksql.persistence.default.format.value for new sessions").tag(config=True)

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._cell_queries: dict[str, object] = {}  # the push query each cell started, by cell id
        self._cell_id: str | None = None
        if shell is not None:
            shell.events.register("pre_run_cell", self._note_cell)
            shell.events.register("post_run_cell", self._forget_cell)

    def start_spark(self) -> bool:
        """Start the local Spark session in the background (`start_spark_on_load`, in a Jupyter
        kernel only: a script or test starts Spark when it needs it). True if a start began."""
        from .spark_logs import in_a_kernel
        from .sparkenv import start_in_background

        if not (self.start_spark_on_load and in_a_kernel()):
            return False
        return start_in_background(show_logs=self.show_spark_logs)

    def _note_cell(self, info) -> None:
        self._cell_id = getattr(info, "cell_id", None)

    def _forget_cell(self, result=None) -> None:
        self._cell_id = None

    @no_var_expand
    @magic_arguments()
    @argument("-h", "--help", action="store_true", help="show this usage")
    @argument("-b", "--bootstrap-servers", metavar="HOST:PORT",
              help="Kafka cluster (default: %%config KStreamMagics.bootstrap_servers, "
                   "$KAFKASQL_BOOTSTRAP_SERVERS or the embedded stack)")
    @argument("--registry", metavar="URL", help="Schema Registry URL")
    @argument("-o", "--output", metavar="NAME", help="bind the result (DataFrame or query handle) to NAME")
    @argument("--dialect", choices=sorted(DIALECTS), help="SQL dialect of this cell")
    @argument("--timeout", type=float, metavar="SECONDS", help="how long a `LIMIT n` push query waits for its rows")
    @argument("--max-rows", type=int, metavar="N", help="rows shown by this cell's live widget")
    @argument("-f", "--file", metavar="PATH", help="run the statements in this file")
    @argument("--chart", metavar="SPEC", help="draw a live query's rows as a chart above its table: "
                                              "'[line|bar|area] x=COL y=COL [by=COL]' (quoted)")
    @line_cell_magic
    def kstream(self, line: str, cell: str | None = None):
        """Streaming SQL over Kafka, on Spark.

        Usage:

            %load_ext kafkasql_magic
            %kstream_local start                 # an embedded Kafka broker for trying things out

            %%kstream
            SET 'auto.offset.reset'='earliest';
            CREATE STREAM orders (id INT KEY, item STRING, qty INT)
              WITH (kafka_topic='orders', value_format='JSON', partitions=2);
            SELECT id, item, qty * 2 AS double_qty, ROWOFFSET FROM orders EMIT CHANGES;

            %%kstream big <<                     # bind the result to `big` (as -o big does)
            SELECT * FROM orders WHERE qty > {threshold} EMIT CHANGES LIMIT 5;

            %kstream --max-rows 50 SELECT * FROM orders EMIT CHANGES;
            %%kstream --chart "line x=WINDOWSTART y=TOTAL by=ITEM"   # a chart above the live table
            %kstream -f queries.sql

        A push query (`EMIT CHANGES`) without LIMIT returns at once with a live widget and runs
        in the background until you press Stop; running its cell again replaces it. With `LIMIT n`
        the cell waits for n rows, showing the query's columns and status meanwhile (what it
        reads, time, rows so far), then shows them as a table (Interrupt stops the query); so does a
        SELECT without EMIT CHANGES (a snapshot of the topic as it is now). `-o NAME` binds the
        pandas DataFrame; the cell returns it too, shown as a table.
        `{name}` and `:name` are replaced by the Python variable's value as a SQL literal (a
        string is quoted, so a value can never add SQL); `${var}` by `DEFINE var = 'value';`.
        A persistent query (CREATE STREAM|TABLE ... AS SELECT, INSERT INTO ... SELECT) returns
        at once with a query card (status, records in/out per second, lag, processing-log
        count, sink topic, Terminate); `%kstream queries` shows a card per running query.
        `%kstream schema [topic]` opens the schema pane: registry subjects, inferred columns and
        the CREATE statement they imply. Settings: `%config KStreamMagics.max_rows = 50` (also
        dialect, timeout, trigger_interval, schema_registry_url, show_spark_logs) apply from the
        next cell on. `--` on the magic line starts a comment.
        """
        try:
            parsed = split_line(line, self._parser)
            args = self._parser.parse_args(shlex.split(" ".join(parsed.options)))
        except (LineError, ValueError) as exc:
            raise UsageError(f"%kstream: {exc}") from None
        if args.help or (cell is None and not parsed.sql and not args.file):
            print(usage(self.kstream.__doc__))
            return None
        if cell is None and parsed.sql.split()[:1] == ["schema"]:
            return self._schema_pane(parsed.sql.split()[1:])
        if cell is None and parsed.sql.split() == ["queries"]:
            return self._query_cards(args)
        text = self._statements(args, parsed.sql, cell)
        try:
            text = pyvars.substitute(text, self.shell.user_ns)
            session = self._session(args)
            self._replace_cell_query(line, cell)
            from IPython.display import display

            # a push query's live view is on show from its plan on; a live one stays
            session.feedback = feedback = CellFeedback(display, chart=args.chart)
            result = handle = None
            try:
                result = session.sql(text, timeout=args.timeout if args.timeout is not None else self.timeout,
                                     dialect=args.dialect or self.dialect, on_done=print)
            finally:
                session.feedback = None
                handle = feedback.close(keep=result if _running_push_query(result) else None)
        except KStreamError as exc:  # shown as its class and message, without a traceback (errors.py)
            exc.args = (with_caret(str(exc), text),)
            raise exc from None
        except ChartError as exc:  # refused before the query started
            raise UsageError(str(exc)) from None
        from .sinks.runner import PersistentQuery

        shown = None
        live = handle is not None
        if args.chart and not live:
            print("--chart draws a live query's rows (EMIT CHANGES without LIMIT): no chart for this result")
        if live:
            self._cell_queries[self._cell_key(line, cell)] = result
            shown = _display_live(result, handle)
        elif isinstance(result, PersistentQuery):
            shown = _display_card(session, result)
        formats = getattr(result, "attrs", {})
        if "key_format" in formats and "value_format" in formats:  # PRINT says what it detected, as ksqlDB does
            print(f"Key format: {formats['key_format']}\nValue format: {formats['value_format']}")
        target = parsed.target or args.output
        if target:
            self.shell.user_ns[target] = result
        if shown is not None:
            return None
        return result_frame(result) if isinstance(result, pd.DataFrame) else result  # shown as a ResultTable

    @property
    def _parser(self):
        return self.kstream.parser

    @staticmethod
    def _statements(args, line_sql: str, cell: str | None) -> str:
        """The SQL to run. A cell's text gets a leading newline so that error positions count
        lines as the editor shows them (the `%%kstream` line is line 1)."""
        if args.file:
            if (cell or "").strip() or line_sql:
                raise UsageError("%kstream -f runs the file's statements: leave the rest of the cell empty")
            try:
                return Path(os.path.expanduser(args.file)).read_text()
            except OSError as exc:
                raise UsageError(f"%kstream -f: cannot read {args.file}: {exc.strerror}") from None
        if cell is not None and line_sql:
            raise UsageError(f"%%kstream: {line_sql.split()[0]!r} on the magic line is neither an option nor NAME <<; "
                             "the statements go in the cell")
        return line_sql if cell is None else "\n" + cell

    def _cell_key(self, line: str, cell: str | None) -> str:
        return self._cell_id or f"{line}\n{cell}"

    def _replace_cell_query(self, line: str, cell: str | None) -> None:
        """Running a cell again stops the push query it started before (and forgets it)."""
        old = self._cell_queries.pop(self._cell_key(line, cell), None)
        if old is not None and old.is_active:
            old.stop()
            for session in _sessions.values():
                session.queries.pop(old.id, None)

    @line_magic
    def kstream_local(self, line: str):
        """%kstream_local start|stop|status: the embedded Kafka broker for demos and tutorials.

        `start` attaches to a stack already started with `python -m kafkasql_magic.local up`
        (Binder's start script runs it) and starts one in this kernel otherwise."""
        from .local import stack
        from .local.running import running_state

        command = (line.split() or ["status"])[0]
        if command == "start":
            shared = running_state() if stack.default() is None else None
            endpoints = shared["endpoints"] if shared else stack.start_default().endpoints
        elif command == "stop":
            stop_all()
            _sessions.clear()
            stopped = stack.stop_default()
            print("embedded stack stopped" if stopped or running_state() is None
                  else "this kernel uses the shared stack (python -m kafkasql_magic.local down stops it)")
            return None
        elif command == "status":
            endpoints = stack.endpoints()
            if endpoints is None:
                print("embedded stack not running")
                return None
        else:
            raise UsageError("usage: %kstream_local start|stop|status")
        for name, value in endpoints.items():
            print(f"{name}={value}")
        return None

    def _schema_pane(self, args: list[str]):
        """`%kstream schema [TOPIC]`: browse the registry's subjects and what they imply."""
        from .live.schema_model import SchemaBrowser
        from .live.schema_pane import SchemaPane

        session = self._session(None)
        if not session.schema_registry_url:
            raise UsageError("%kstream schema needs a Schema Registry: --registry on a %%kstream cell, "
                             "%config KStreamMagics.schema_registry_url, or %kstream_local start")
        # Insert and Copy act in the page: a widget click cannot add a cell from the kernel.
        pane = SchemaPane(SchemaBrowser(session.schema_registry_url, session.bootstrap_servers))
        if args:
            pane.wait()  # the topic list loads in the background
            try:
                pane.select(args[0])
            except KeyError:
                raise UsageError(f"%kstream schema: no topic {args[0]!r} on {session.bootstrap_servers}") from None
        return pane.widget

    def _query_cards(self, args) -> None:
        """`%kstream queries`: a card per running persistent query."""
        session = self._session(args)
        running = list(session.persistent.queries.values())
        if not running:
            print("No persistent query is running.")
        for query in running:
            _display_card(session, query)

    # ------------------------------------------------------------ helpers
    def _configure_clients(self, session: Session) -> None:
        """Give `kafka_config` to the clients of the session's cluster and registry, also when it
        (or the registry) changed after the session was made; unchanged, SET values stay."""
        wanted = (session.schema_registry_url, repr(self.kafka_config))
        if self.kafka_config is None or _configured.get(session.bootstrap_servers) == wanted:
            return
        clientconf.configure(session.bootstrap_servers, session.schema_registry_url,
                             clientconf.from_argument(self.kafka_config))
        _configured[session.bootstrap_servers] = wanted

    def _session(self, args) -> Session:
        """The session of the cell's cluster, with the settings in force now applied to it."""
        bootstrap = getattr(args, "bootstrap_servers", None) or self.bootstrap_servers \
            or os.environ.get("KAFKASQL_BOOTSTRAP_SERVERS")
        embedded_registry = None
        if not bootstrap:
            from .local import stack

            endpoints = stack.endpoints()  # this kernel's, else the one Binder's start script launched
            if endpoints is None:
                raise UsageError(
                    "No Kafka cluster: pass --bootstrap-servers, set %config KStreamMagics.bootstrap_servers, "
                    "or start the embedded one with %kstream_local start"
                )
            bootstrap = endpoints["bootstrap.servers"]
            embedded_registry = endpoints.get("schema.registry.url")
        session = _sessions.get(bootstrap)
        if session is None:
            session = _sessions[bootstrap] = Session(bootstrap)
            for name, value in (("ksql.persistence.default.format.key", self.default_key_format),
                                ("ksql.persistence.default.format.value", self.default_value_format)):
                if value:
                    session.settings[name] = value
        session.use_registry(getattr(args, "registry", None) or self.schema_registry_url or embedded_registry)
        self._configure_clients(session)
        session.dialect = self.dialect
        session.max_rows = getattr(args, "max_rows", None) or self.max_rows
        session.timeout = self.timeout
        session.trigger_interval = self.trigger_interval
        session.show_spark_logs = self.show_spark_logs
        return session


def unload(shell) -> None:
    """Stop every query and stop following cell runs (`%unload_ext`)."""
    stop_all()
    for magics in shell.magics_manager.registry.values():
        if isinstance(magics, KStreamMagics):
            for event, callback in (("pre_run_cell", magics._note_cell), ("post_run_cell", magics._forget_cell)):
                try:
                    shell.events.unregister(event, callback)
                except ValueError:
                    pass

