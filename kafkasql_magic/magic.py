"""The `%%kstream` and `%kstream_local` magics: a thin shell over `Session`.

The only module that imports IPython. User errors are shown as `UsageError` (no traceback);
internal errors keep theirs.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Float, Int, Unicode

from .errors import KStreamError
from .session import Session

_sessions: dict[str, Session] = {}

#: A `--` comment on the magic line: `--` followed by a blank or the end (not `--option`).
_LINE_COMMENT = re.compile(r"(^|\s)--(\s.*)?$")


def _options_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%kstream", add_help=False, exit_on_error=False)
    parser.add_argument("--bootstrap-servers", "-b")
    parser.add_argument("--registry")
    parser.add_argument("-o", "--output")
    parser.add_argument("--dialect", choices=["ksql", "materialize"])
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--max-rows", type=int)
    return parser


def _embedded_endpoints() -> dict | None:
    """The embedded stack's endpoints: this kernel's (`%kstream_local start`), else one started
    with `python -m kafkasql_magic.local up` (Binder's start script does that)."""
    from .local import stack
    from .local.running import running_state

    running = stack.default()
    if running is not None:
        return running.endpoints
    state = running_state()
    return state["endpoints"] if state else None


def stop_all() -> None:
    for session in _sessions.values():
        session.stop()


@magics_class
class KStreamMagics(Magics):
    """Streaming SQL over Kafka, on Spark.

    Usage::

        %load_ext kafkasql_magic
        %kstream_local start                 # an embedded Kafka broker for trying things out

        %%kstream
        SET 'auto.offset.reset'='earliest';
        CREATE STREAM orders (id INT KEY, item STRING, qty INT)
          WITH (kafka_topic='orders', value_format='JSON', partitions=2);
        SELECT id, item, qty * 2 AS double_qty, ROWOFFSET FROM orders EMIT CHANGES;

    Options of `%%kstream` (on the magic line):
      -b/--bootstrap-servers HOST:PORT   Kafka cluster (default: %config KStreamMagics.bootstrap_servers,
                                         $KAFKASQL_BOOTSTRAP_SERVERS or the embedded stack)
      --registry URL                     Schema Registry URL
      -o/--output NAME                   bind the result (DataFrame or query handle) to NAME
      --dialect ksql|materialize         SQL dialect of this cell
      --timeout SECONDS                  how long a `LIMIT n` push query may wait for its rows
      --max-rows N                       rows shown by the live widget

    A push query (`EMIT CHANGES`) without LIMIT returns at once with a live widget and runs
    in the background until you press Stop. With `LIMIT n` the cell waits for n rows and
    returns a pandas DataFrame; so does a SELECT without EMIT CHANGES (a snapshot of the
    topic as it is now). `%kstream <statement>` runs one statement from a line.
    `${var}` is replaced by variables from `DEFINE var = 'value';`.
    `%kstream schema [topic]` opens the schema pane: registry subjects, inferred columns and
    the CREATE statement they imply.
    """

    bootstrap_servers = Unicode(None, allow_none=True, help="Kafka bootstrap servers").tag(config=True)
    schema_registry_url = Unicode(None, allow_none=True, help="Schema Registry URL").tag(config=True)
    dialect = Unicode("ksql", help="Default SQL dialect: ksql or materialize").tag(config=True)
    max_rows = Int(20, help="Rows shown by the live widget").tag(config=True)
    timeout = Float(60.0, help="Seconds a LIMIT push query waits for its rows").tag(config=True)
    trigger_interval = Unicode("0.5 seconds", help="Micro-batch interval of push queries").tag(config=True)
    default_key_format = Unicode(None, allow_none=True,
                                 help="ksql.persistence.default.format.key for new sessions").tag(config=True)
    default_value_format = Unicode(None, allow_none=True,
                                   help="ksql.persistence.default.format.value for new sessions").tag(config=True)

    @no_var_expand
    @line_cell_magic
    def kstream(self, line: str, cell: str | None = None):
        if cell is None and line.split()[:1] == ["schema"]:
            return self._schema_pane(line.split()[1:])
        if cell is None:
            line, cell = "", line
        options = self._options(line)
        try:
            session = self._session(options.bootstrap_servers, options.registry)
            result = session.sql(cell, timeout=options.timeout, dialect=options.dialect)
        except KStreamError as exc:
            raise UsageError(str(exc)) from None
        if options.output:
            self.shell.user_ns[options.output] = result
        return result

    @line_magic
    def kstream_local(self, line: str):
        """%kstream_local start|stop|status: the embedded Kafka broker for demos and tutorials."""
        from .local import stack

        command = (line.split() or ["status"])[0]
        if command == "start":
            running = stack.start_default()
        elif command == "stop":
            stop_all()
            _sessions.clear()
            stack.stop_default()
            print("embedded stack stopped")
            return None
        elif command == "status":
            running = stack.default()
            if running is None:
                print("embedded stack not running")
                return None
        else:
            raise UsageError("usage: %kstream_local start|stop|status")
        for name, value in running.endpoints.items():
            print(f"{name}={value}")
        return None

    def _schema_pane(self, args: list[str]):
        """`%kstream schema [TOPIC]`: browse the registry's subjects and what they imply."""
        from .live.schema_model import SchemaBrowser
        from .live.schema_pane import SchemaPane

        session = self._session(None, None)
        if not session.schema_registry_url:
            raise UsageError("%kstream schema needs a Schema Registry: --registry on a %%kstream cell, "
                             "%config KStreamMagics.schema_registry_url, or %kstream_local start")
        pane = SchemaPane(SchemaBrowser(session.schema_registry_url, session.bootstrap_servers),
                          on_insert=lambda text: self.shell.set_next_input(text))
        if args:
            pane.wait()  # the topic list loads in the background
            try:
                pane.select(args[0])
            except KeyError:
                raise UsageError(f"%kstream schema: no topic {args[0]!r} on {session.bootstrap_servers}") from None
        return pane.widget

    # ------------------------------------------------------------ helpers
    def _options(self, line: str) -> argparse.Namespace:
        line = _LINE_COMMENT.sub("", line)
        try:
            options, rest = _options_parser().parse_known_args(shlex.split(line))
        except (argparse.ArgumentError, ValueError) as exc:
            raise UsageError(f"%%kstream: {exc}") from None
        if rest:
            raise UsageError(f"%%kstream: unknown option(s) {' '.join(rest)}")
        return options

    def _session(self, bootstrap: str | None, registry: str | None) -> Session:
        bootstrap = bootstrap or self.bootstrap_servers or os.environ.get("KAFKASQL_BOOTSTRAP_SERVERS")
        if not bootstrap:
            endpoints = _embedded_endpoints()
            if endpoints is None:
                raise UsageError(
                    "No Kafka cluster: pass --bootstrap-servers, set %config KStreamMagics.bootstrap_servers, "
                    "or start the embedded one with %kstream_local start"
                )
            bootstrap = endpoints["bootstrap.servers"]
            registry = registry or endpoints.get("schema.registry.url")
        session = _sessions.get(bootstrap)
        if session is None:
            session = _sessions[bootstrap] = Session(
                bootstrap, schema_registry_url=registry or self.schema_registry_url, dialect=self.dialect,
                max_rows=self.max_rows, timeout=self.timeout, trigger_interval=self.trigger_interval,
            )
            for name, value in (("ksql.persistence.default.format.key", self.default_key_format),
                                ("ksql.persistence.default.format.value", self.default_value_format)):
                if value:
                    session.settings[name] = value
        return session


KStreamMagics.kstream.__doc__ = KStreamMagics.__doc__  # `%%kstream?` shows the manual
