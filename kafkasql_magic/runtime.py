"""Running queries: push queries in the background and bounded collection (results.py splits
each collected batch into rows and processing-log entries).

Each micro-batch of a built frame is collected once, as Arrow, and split into result rows
and processing-log entries (see engine.build). Spark calls `foreachBatch` on its stream thread,
so everything here that the UI reads is guarded by locks or events.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from collections import deque

import pandas as pd
from pyspark.sql import DataFrame

from . import spark_exit
from .errors import KafkaError, KStreamError, QueryStopped, QueryTimeout
from .live import LiveModel
from .live.render import PREPARING
from .engine.analysis.plan import CAPTURE_METRICS, QueryPlan
from .engine.api import Built
from .engine.columns import result_column
from .checkpoints import batch_end_offsets, remove_when_stopped, wait_for_stream_thread
from .diffs import ChangeTracker
from .progress import ProgressTally
from .results import (ProcessingLog, collectable, located_message, observed_errors, record_order, split_batch,
                      to_pandas)


#: How long a stopping query waits for Spark's stream thread to close its last micro-batch.
STREAM_THREAD_WAIT = 10.0
#: seconds an interrupted start waits for Spark to show the query it may have started anyway
UNSEEN_START_WAIT = 10.0
#: seconds a query's start waits, at most, for the query started before it to have its sources up
SOURCES_UP_WAIT = 30.0


class PushQuery:
    """A running push query (`SELECT ... EMIT CHANGES`): a handle with rows, progress and stop()."""

    def __init__(self, plan: QueryPlan, frame: DataFrame, model: LiveModel, *, query_id: str, sql: str,
                 log: ProcessingLog, build_batch=None, buffer_rows: int = 10_000,
                 trigger_interval: str = "0.5 seconds", ending_offsets: dict[str, int] | None = None,
                 fail_on: frozenset[str] = frozenset(), changes: ChangeTracker | None = None):
        """`frame` is the built frame, or (a per-batch plan) the raw stream that `build_batch`
        turns into a Built per micro-batch. `model` (`live_model`, made as the statement was
        planned) gets its rows and progress. A bad record of a source in `fail_on` (Materialize's
        rule) fails the query, naming the record, after logging it; others are logged only.
        `changes` (a SUBSCRIBE) turns each batch's rows into Materialize's diffs."""
        self.id = query_id
        self.sql = sql
        self.bootstrap: str | None = None  # the broker it reads, for `waiting_for` (set by the session)
        self.chart = None  # a live.chart.ChartSpec its widget draws (the magic's --chart), or None
        self.view = None  # the live.LiveView that shows it: the cell's (live.feedback), else made when displayed
        self.plan = plan
        self.names = list(model.columns)
        self.limit = plan.limit
        self._log = log
        self._errors = 0
        self._frame = frame
        self._build_batch = build_batch
        self._buffer: deque[tuple] = deque(maxlen=max(buffer_rows, self.limit or 0))
        self._rows_total = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._failure: BaseException | None = None
        self._query = None
        self._trigger = trigger_interval
        self._ending = ending_offsets
        self._fail_on = fail_on
        self._range_read = False
        self._last_batch: int | None = None
        self._latest_batch: int | None = None
        self._logged: set[tuple] = set()
        self._checkpoint = tempfile.mkdtemp(prefix=f"kafkasql-{query_id}-")
        self._observed_through = -1  # the last batch whose failed records were logged
        self._tally = ProgressTally()
        self._changes = changes
        self.model = model

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "PushQuery":
        writer = (self._frame.writeStream.queryName(self.id).outputMode(self.plan.output_mode)
                  .foreachBatch(without_java_frames(self._on_batch))
                  .option("checkpointLocation", self._checkpoint).trigger(processingTime=self._trigger))
        try:
            self._query = start_in_turn(writer.start)
        except KeyboardInterrupt:  # the notebook's Interrupt cut the call, not Spark's start
            self._stop_unseen()
            raise
        self.model.set_phase(None)  # started: now it waits for records
        threading.Thread(target=self._watch, name=f"{self.id}-watch", daemon=True).start()
        return self

    def _stop_unseen(self) -> None:
        """Stop the query an interrupted start may have left running: the JVM carries on with a
        call Python stopped waiting for, so look for the query by name for a few seconds."""
        streams = self._frame.sparkSession.streams
        deadline = time.monotonic() + UNSEEN_START_WAIT
        while time.monotonic() < deadline:
            started = [q for q in streams.active if q.name == self.id]
            for query in started:
                query.stop()
                remove_when_stopped(query, self._checkpoint)
            if started:
                break
            time.sleep(0.2)
        self.model.set_state("STOPPED")
        self._done.set()

    def _watch(self) -> None:
        from .waiting import PROBE_INTERVAL_S

        next_probe = time.monotonic() + PROBE_INTERVAL_S
        try:
            while not self._query.awaitTermination(0.1):
                self.model.on_records_read(self._tally.follow(self._query))
                self._raise_fatal(self._log_observed())
                if self._last_batch is not None and self._progress_of(self._last_batch):
                    self._query.stop()
                elif self._ending is not None and self._read_to_end():
                    self._range_read = True
                    self._query.stop()
                elif time.monotonic() >= next_probe:  # the widget says what the query waits for
                    self.model.set_message(self.waiting_for)
                    next_probe = time.monotonic() + PROBE_INTERVAL_S
        except Exception as exc:  # the Spark query failed (or a bad record failed it): surface it on the handle
            self._failure = exc
            if spark_exit.died(exc, self._frame.sparkSession) is not None:  # nothing more to ask a JVM that is gone
                self.model.set_state("FAILED", "Spark's JVM exited")
                self._done.set()
                shutil.rmtree(self._checkpoint, ignore_errors=True)
                return
            self.model.set_state("FAILED", failure_message(exc))
            if self._query.isActive:
                self._query.stop()
        else:
            if self.model.state not in ("FAILED",):
                self.model.set_state("FINISHED" if self._limit_reached() or self._range_read else "STOPPED")
        wait_for_stream_thread(self._query, STREAM_THREAD_WAIT)  # the last batch's progress comes in
        self.model.on_records_read(self._tally.follow(self._query))
        fatal = self._log_observed()
        if fatal and self._failure is None:  # the last batch's bad record: the query failed all the same
            self._failure = KStreamError(located_message(fatal[0]))
            self.model.set_state("FAILED", str(self._failure))
        self._done.set()
        remove_when_stopped(self._query, self._checkpoint)

    def stop(self) -> None:
        """Stop the Spark query; safe to call from any thread and more than once. A plan that
        observes errors first lets the latest batch's progress (which carries them) come in."""
        if self._query is not None and self._query.isActive:
            deadline = time.monotonic() + 5
            while (self.plan.observed and self._latest_batch is not None and self._query.isActive
                   and not self._progress_of(self._latest_batch) and time.monotonic() < deadline):
                time.sleep(0.05)
            self._query.stop()
        self._done.wait(timeout=30)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def state(self) -> str:
        return self.model.state

    @property
    def is_active(self) -> bool:
        return not self._done.is_set()

    @property
    def progress(self) -> dict | None:
        return self._query.lastProgress if self._query is not None else None

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    @property
    def waiting_for(self) -> str | None:
        """What the running query waits for (a broker or schema registry that does not answer), or None."""
        from . import waiting

        return waiting.waiting_for(self.plan.source, self.bootstrap) if self.is_active else None

    def _log_observed(self) -> list[dict]:
        """Log the records that failed before a join or aggregation, once per micro-batch, as
        each batch's progress (which carries them) comes in; return those of sources whose bad
        records fail the query (Materialize's rule), first record first."""
        logged: list[dict] = []
        if self.plan.capture != CAPTURE_METRICS or self._query is None:
            return logged
        if not self._progress_of(self._observed_through + 1):
            return logged  # no new batch: don't convert the progress history
        for progress in self._query.recentProgress:
            batch = int(progress["batchId"])
            if batch <= self._observed_through:
                continue
            self._observed_through = batch
            entries = observed_errors(progress.observedMetrics or {}, self.plan.observed_sources, self.id,
                                      base64_bytes=True)
            if entries:
                self._log.add(entries)
                self._errors += len(entries)
                self.model.on_errors(self._errors, entries[-5:])
                logged += entries
        return self._fatal(logged)

    def _fatal(self, errors: list[dict]) -> list[dict]:
        """The errors of sources in `fail_on`, in record order."""
        return sorted((e for e in errors if e["SOURCE"] in self._fail_on),
                      key=lambda e: (e["TOPIC"], e["PARTITION"], e["OFFSET"]))

    @staticmethod
    def _raise_fatal(fatal: list[dict]) -> None:
        if fatal:
            raise KStreamError(located_message(fatal[0]))

    def _progress_of(self, batch_id: int) -> bool:
        progress = self._query.lastProgress
        return bool(progress) and int(progress["batchId"]) >= batch_id

    def _read_to_end(self) -> bool:
        """True once the source has read every offset range the WHERE clause bounds (seek)."""
        progress = self._query.lastProgress
        if not progress:
            return False
        end = progress["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        return bool(end) and all(int(end.get(p, -1)) >= o for p, o in self._ending.items())

    @property
    def records_read(self) -> int:
        """Records the source delivered to Spark (every batch), for seek checks and the widget."""
        return self._tally.follow(self._query) if self._query is not None else 0

    # ------------------------------------------------------------ data
    def _limit_reached(self) -> bool:
        return self.limit is not None and self._rows_total >= self.limit

    def _on_batch(self, batch: DataFrame, batch_id: int) -> None:
        if self._limit_reached():
            # The query is stopping. A batch Spark started meanwhile (a watermark's batch with no
            # data) still runs to its end, or its state stores never commit and Spark fails the
            # query (STATE_STORE_COMMIT_VALIDATION_FAILED).
            batch.write.format("noop").mode("overwrite").save()
            return
        self._latest_batch = batch_id
        built = self._build_batch(batch) if self._build_batch is not None else None
        if built is not None:
            batch = built.frame
        width = len(self.plan.names) + (1 if self._changes is not None else 0)  # a SUBSCRIBE's rows carry an identity
        # rows of records (no groups, no diffs) are shown in record-time order, newest on top
        by_record = self._changes is None and not self.plan.diffs and self.plan.grouping is None and not self.plan.retracts
        table = collectable(batch, width, timed=by_record).toArrow()
        if by_record:
            table = record_order(table)
        if self.plan.diffs:  # a diff join's buckets emit one after another: changes are shown in time order
            table = table.sort_by(result_column(0))  # (a stable sort: one time's changes keep their order)
        collected = split_batch(table, width, self.id, self.plan.source.name)
        if built is not None:
            failed = {n: {"errors": [r.e for r in f.collect()]} for n, f in built.error_frames.items()}
            collected.errors += self._first_seen(observed_errors(failed, self.plan.observed_sources, self.id,
                                                                 base64_bytes=False))
        if collected.errors:
            self._log.add(collected.errors)
            self._errors += len(collected.errors)
            self.model.on_errors(self._errors, collected.errors[-5:])
        self._raise_fatal(self._fatal(collected.errors))  # the batch's rows are not shown: the source is in an error state
        rows = collected.rows if self._changes is None else self._changes.batch(
            collected.rows, batch_end_offsets(self._checkpoint, batch_id))
        if self.limit is not None:
            rows = rows[: self.limit - self._rows_total]
        with self._lock:
            self._buffer.extend(rows)
            self._rows_total += len(rows)
        self.model.on_batch(batch_id, rows)  # records read come from the batch's progress report (_watch)
        if self._limit_reached():
            self._last_batch = batch_id  # the watcher stops once this batch's progress is in

    def _first_seen(self, entries: list[dict]) -> list[dict]:
        """Entries for records not logged before: each micro-batch reads a joined table again,
        and a bad table record is logged once."""
        fresh = []
        for entry in entries:
            where = (entry["TOPIC"], entry["PARTITION"], entry["OFFSET"])
            if where not in self._logged:
                self._logged.add(where)
                fresh.append(entry)
        return fresh

    def rows(self) -> pd.DataFrame:
        """The rows received so far (the newest `buffer_rows` of them)."""
        with self._lock:
            return to_pandas(list(self._buffer), self.names)

    def result(self, timeout: float) -> pd.DataFrame:
        """Block until LIMIT rows arrived; raise on failure or timeout (rows so far attached)."""
        try:
            finished = self._done.wait(timeout)
        except KeyboardInterrupt:  # the notebook's Interrupt: nothing keeps running unseen
            self.stop()
            raise QueryStopped() from None
        waiting = None if finished else self.waiting_for  # asked before stop(): why rows are missing
        if not finished:
            self.stop()
        if self._failure is not None:
            if spark_exit.died(self._failure, self._frame.sparkSession, within=0) is not None:
                raise self._failure  # the session says why the JVM exited
            raise KStreamError(failure_message(self._failure)) from None
        rows = self.rows()
        rows.attrs.update(query_id=self.id, records_read=self.records_read)
        if not finished and not self._limit_reached() and not self._range_read:
            why = (f"stopped while {waiting}." if waiting else
                   "stopped. Is 'auto.offset.reset' set to 'earliest' and does the topic have data?")
            raise QueryTimeout(f"Query {self.id} returned {len(rows)} of {self.limit} rows within "
                               f"{timeout:g} seconds; {why}", rows)
        return rows

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        from .live.view import LiveView

        if self.view is None:
            self.view = LiveView(self.model, on_stop=self.stop_soon, chart=self.chart)
        return self.view._repr_mimebundle_(include=include, exclude=exclude, **kwargs)

    def stop_soon(self) -> None:
        """Stop it on a thread of its own: a widget's Stop click returns at once."""
        threading.Thread(target=self.stop, daemon=True).start()

    def __repr__(self) -> str:
        return f"<PushQuery {self.id} {self.state}: {self._rows_total} rows>"


def live_model(plan: QueryPlan, names: list[str], *, sql: str, max_rows: int) -> LiveModel:
    """The model a push query's rows and progress go to, made from its plan before Spark prepares
    the query, so the cell shows the columns and status at once. A table's changelog keeps the
    latest row per key (diffs are rows, never replaced)."""
    keyed = plan.kind == "TABLE" and plan.key_names and not plan.changes
    model = LiveModel(names, max_rows=max_rows, key_columns=plan.key_names if keyed else None, title=sql,
                      blocking=plan.limit is not None)
    model.set_phase(PREPARING)
    return model


class BatchFailed(Exception):
    """A micro-batch's failure as foreachBatch hands it back to Spark: its traceback without
    the Java stack frames."""


#: the lines of a Java stack trace that are frames ("\tat ...", "\t... 12 more")
_JAVA_FRAME = re.compile(r"^\t(?:at |\.\.\. \d+ more)")
#: past this, the middle of the text goes (its head and its tail, the innermost cause, stay)
BATCH_FAILURE_CHARS = 16_000


class _StartTurns:
    """Spark gives the driver-side Python worker of a Python streaming source a fixed 10 s to
    connect back (PythonWorkerFactory); several queries starting at once on a loaded machine
    (a cell of persistent statements, a restart replaying the command topic) can miss it, and
    such a query fails its start and is retried only after its backoff. So a query starts once
    the one started before it has its sources up (or SOURCES_UP_WAIT has passed): a single
    statement never waits, and starts never overlap."""

    def __init__(self):
        self._lock = threading.Lock()
        self._previous = None

    def __call__(self, start):
        with self._lock:
            if self._previous is not None:
                sources_up(self._previous, SOURCES_UP_WAIT)
            query = start()
            self._previous = query
            return query


def sources_up(query, timeout_s: float) -> bool:
    """Wait until Spark has initialised `query`'s sources (its status moved past "Initializing
    sources"), it ended, or `timeout_s` passed; True when they are up."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if not query.isActive or query.status["message"] != "Initializing sources":
                return query.isActive
        except Exception:  # the session went away: nothing to wait for
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


#: every streaming query of the process starts through this
start_in_turn = _StartTurns()


def without_java_frames(on_batch):
    r"""`on_batch` for foreachBatch, whose failure reaches Spark as its Python traceback
    without the Java stack frames. Spark 4.3 matches that text against
    `calling((.|\r\n|\r|\n)*)(...)` (StreamExecution.isInterruptionException), one recursion
    per character: a batch's Py4JJavaError with its stack trace overflowed the stream thread's
    stack there, and the query failed with a StackOverflowError in java.util.regex in place of
    its cause. Every exception line stays, so Spark still tells a stop (an interrupted or
    cancelled job) from a failure and our own errors' lines still name the problem."""
    @functools.wraps(on_batch)
    def run(batch, batch_id: int) -> None:
        try:
            on_batch(batch, batch_id)
        except Exception as exc:
            raise BatchFailed(batch_failure_text(exc)) from None
    return run


def batch_failure_text(exc: BaseException) -> str:
    """The exception's Python traceback (its causes' too), without the Java frames."""
    import traceback

    lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).splitlines()
    text = "\n".join(line for line in lines if not _JAVA_FRAME.match(line))
    if len(text) > BATCH_FAILURE_CHARS:
        half = BATCH_FAILURE_CHARS // 2
        text = f"{text[:half]}\n[... {len(text) - 2 * half} characters ...]\n{text[-half:]}"
    return text


def failure_message(exc: BaseException) -> str:
    """The useful line of a Spark streaming failure (our own KafkaError text when it is one)."""
    from .redact import text as redacted

    text = redacted(str(exc))
    ours = _our_error().search(text)
    if ours:
        return text[ours.end():].splitlines()[0]
    return text.splitlines()[0] if text else type(exc).__name__


def _our_error() -> re.Pattern:
    """The first of our errors in a traceback's text (a subclass such as BrokerUnreachable
    too); the names are collected when asked, once every module that subclasses is loaded."""
    from .formats.schema_registry import RegistryUnavailable

    names, todo = [], [KStreamError]
    while todo:
        cls = todo.pop()
        names.append(cls.__name__)
        todo.extend(cls.__subclasses__())
    names.append(RegistryUnavailable.__name__)
    return re.compile(r"\b(?:%s): " % "|".join(sorted(set(names))))


def stops_on_interrupt(handler):
    """A query statement whose run the notebook's Interrupt may cut anywhere (planning, Spark's
    start, the wait for rows, a snapshot's Spark job, which PySpark cancels): `QueryStopped`, one
    line, instead of a traceback through the package; a query it started is stopped first."""
    @functools.wraps(handler)
    def run(*args, **kwargs):
        root = logging.getLogger()
        root.addFilter(_PY4J_INTERRUPTED)
        try:
            return handler(*args, **kwargs)
        except QueryStopped:
            raise
        except KeyboardInterrupt:
            raise QueryStopped() from None
        finally:
            root.removeFilter(_PY4J_INTERRUPTED)
    return run


class _Py4jInterrupted(logging.Filter):
    """py4j logs the traceback of an Interrupt that cut a call to the JVM (on the root logger);
    a query statement handles that interrupt itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "KeyboardInterrupt while sending command."


_PY4J_INTERRUPTED = _Py4jInterrupted()


def collect_bounded(built: Built, plan: QueryPlan, *, query_id: str, log: ProcessingLog) -> pd.DataFrame:
    """Run a built batch frame (a pull query) and return its rows; errors go to the log."""
    try:
        table = collectable(built.frame, len(plan.names)).toArrow()
    except Exception as exc:  # a registry that stayed away is the user's to know, not a crash
        if "RegistryUnavailable: " not in str(exc):
            raise
        raise KafkaError(failure_message(exc)) from None
    collected = split_batch(table, len(plan.names), query_id, plan.source.name)
    log.add(collected.errors)
    metrics = {name: observation.get for name, observation in built.observations.items()}
    log.add(observed_errors(metrics, plan.observed_sources, query_id, base64_bytes=False))
    rows = collected.rows if plan.limit is None else collected.rows[: plan.limit]
    return to_pandas(rows, plan.names)
