"""The state behind a live push-query display, without any UI.

Micro-batch callbacks arrive on a Spark streaming thread while the UI (or a test) reads,
so every change happens under one lock and readers get frozen snapshots.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import render

log = logging.getLogger(__name__)

STATES = ("STARTING", "RUNNING", "STOPPED", "FINISHED", "FAILED")
TERMINAL_STATES = frozenset({"STOPPED", "FINISHED", "FAILED"})
MAX_ERRORS = 5
RATE_WINDOW = 5.0  # seconds of arrivals behind a rate: current, yet not jumpy
HISTORY_SECONDS = 30  # per-second row counts kept for the sparkline


@dataclass(frozen=True)
class Snapshot:
    """Everything a view needs, copied out under the lock (tuples, so it cannot drift)."""

    version: int
    title: str
    state: str
    message: str | None
    columns: tuple[str, ...]
    key_columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    batch_id: int | None
    rows_total: int
    input_rows_total: int
    rows_per_second: float | None  # result rows over the last RATE_WINDOW; None once ended
    input_rows_per_second: float | None  # records read, likewise
    recent_rows: tuple[int, ...]  # result rows per second, the last HISTORY_SECONDS, oldest first
    error_count: int
    latest_errors: tuple[str, ...]
    last_update: float | None
    elapsed: float = 0.0  # seconds since the query started (until it ended)
    reading: str | None = None  # what the query reads: topic, partitions, from which offsets
    blocking: bool = False  # the cell waits for the query (LIMIT): Interrupt stops it, not a Stop button
    keys_dropped: int = 0  # a table's keys dropped from view (past max_rows, least recently updated first)
    phase: str | None = None  # what the query does before it reads: being prepared, Spark starting

    @property
    def rows_dropped(self) -> bool:
        """Whether rows went out of view: a stream's older rows, a table's least recently updated keys."""
        return bool(self.keys_dropped) if self.key_columns else self.rows_total > len(self.rows)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def to_text(self) -> str:
        return render.to_text(self)

    def to_html(self) -> str:
        return render.to_html(self)


Callback = Callable[[Snapshot], None]


class LiveModel:
    """Rows and progress of one running query.

    Without `key_columns` it keeps the last `max_rows` rows (a stream). With them it reads a
    TABLE changelog: the latest row per key, at most `max_rows` keys, most recently updated last.
    `reading` says what the query reads (shown while it waits for rows); `blocking`: the cell
    waits for the query's rows (a LIMIT), so Interrupt, not Stop, ends it. A model is made as its
    statement is planned, so the cell shows it at once; until the query reads, its `phase` says
    what goes on (`set_phase`).
    """

    def __init__(
        self,
        columns: list[str],
        *,
        max_rows: int = 20,
        key_columns: list[str] | None = None,
        title: str = "",
        reading: str | None = None,
        blocking: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ):
        if max_rows < 1:
            raise ValueError("max_rows must be at least 1")
        self.columns = tuple(columns)
        self.key_columns = tuple(key_columns or ())
        missing = [k for k in self.key_columns if k not in self.columns]
        if missing:
            raise ValueError(f"key columns not among the columns: {missing}")
        self._key_index = tuple(self.columns.index(k) for k in self.key_columns)
        self.max_rows = max_rows
        self.title = title
        self.reading = reading
        self.blocking = blocking
        self._phase: str | Callable[[], str] | None = None
        self._lock = threading.Lock()
        self._rows: collections.deque | collections.OrderedDict
        if self._key_index:
            self._rows = collections.OrderedDict()
        else:
            self._rows = collections.deque(maxlen=max_rows)
        self._state = "STARTING"
        self._message: str | None = None
        self._batch_id: int | None = None
        self._rows_total = 0
        self._keys_dropped = 0
        self._input_rows_total = 0
        self._clock = clock
        self._started = clock()
        self._ended: float | None = None
        self._arrivals: collections.deque[tuple[float, int, int]] = collections.deque()  # (time, rows, records)
        self._error_count = 0
        self._errors: collections.deque[str] = collections.deque(maxlen=MAX_ERRORS)
        self._last_update: float | None = None
        self._version = 0
        self._subscribers: list[Callback] = []

    # -- changes ---------------------------------------------------------------------------

    @property
    def state(self) -> str:
        return self._state

    def set_state(self, state: str, message: str | None = None) -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}; expected one of {STATES}")
        with self._lock:
            self._state = state
            self._message = message
            if state in TERMINAL_STATES and self._ended is None:
                self._ended = self._clock()
            changed = self._changed()
        self._notify(changed)

    def set_message(self, message: str | None) -> None:
        """A note under the status line while the query runs (what it waits for); once the
        query ended its final message stays."""
        with self._lock:
            if self._state in TERMINAL_STATES or message == self._message:
                return
            self._message = message
            changed = self._changed()
        self._notify(changed)

    def set_phase(self, phase: str | Callable[[], str] | None) -> None:
        """What the query does before it reads (None once it reads): a text, or a function giving
        the current text (seconds that tick), asked at every snapshot."""
        with self._lock:
            self._phase = phase
            changed = self._changed()
        self._notify(changed)

    def set_reading(self, reading: str | None) -> None:
        """What the query reads, once its read is planned."""
        with self._lock:
            self.reading = reading
            changed = self._changed()
        self._notify(changed)

    def on_batch(self, batch_id: int, rows: Iterable[tuple]) -> None:
        """Record one micro-batch; rows are tuples in `columns` order. Rates are counted
        from arrivals here, so they are current (and fall to zero when the stream is idle)."""
        rows = [tuple(r) for r in rows]
        width = len(self.columns)
        for r in rows:
            if len(r) != width:
                raise ValueError(f"row has {len(r)} values, expected {width}: {r!r}")
        with self._lock:
            if self._key_index:
                for r in rows:
                    self._upsert(r)
            else:
                self._rows.extend(rows)
            self._rows_total += len(rows)
            self._batch_id = batch_id
            self._arrivals.append((self._clock(), len(rows), 0))
            if self._state == "STARTING":
                self._state = "RUNNING"
            changed = self._changed()
        self._notify(changed)

    def on_records_read(self, total: int) -> None:
        """The records the source has read so far (from Spark's progress reports, which come in
        just after each micro-batch): the rise since the last call counts towards records in/s now."""
        with self._lock:
            if total <= self._input_rows_total:
                return
            self._arrivals.append((self._clock(), 0, total - self._input_rows_total))
            self._input_rows_total = total
            changed = self._changed()
        self._notify(changed)

    def _upsert(self, row: tuple) -> None:
        key = tuple(row[i] for i in self._key_index)
        key = tuple(_hashable(k) for k in key)
        table = self._rows
        table.pop(key, None)  # re-inserting moves the key to the end: most recent last
        table[key] = row
        while len(table) > self.max_rows:
            table.popitem(last=False)
            self._keys_dropped += 1

    def on_errors(self, count: int, latest: list) -> None:
        """Record-level errors from the processing log: the total so far and the newest ones
        (processing-log entries, shown with their partition and offset, or plain messages)."""
        with self._lock:
            self._error_count = count
            self._errors.extend(_error_line(e) for e in latest)
            changed = self._changed()
        self._notify(changed)

    def tick(self) -> None:
        """Let time pass for a running query: rates decay to zero while no batch arrives."""
        with self._lock:
            if self._state in TERMINAL_STATES:
                return
            changed = self._changed()
        self._notify(changed)

    # -- reading ---------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot()

    def to_text(self) -> str:
        return render.to_text(self.snapshot())

    def to_html(self) -> str:
        return render.to_html(self.snapshot())

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return self.to_text()

    # -- subscriptions ---------------------------------------------------------------------

    def subscribe(self, callback: Callback) -> None:
        """Call `callback(snapshot)` after every change, on the thread that made the change."""
        with self._lock:
            self._subscribers.append(callback)

    def unsubscribe(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

    def _changed(self) -> tuple[Snapshot, list[Callback]]:
        self._version += 1
        self._last_update = time.time()
        return self._snapshot(), list(self._subscribers)

    def _notify(self, changed: tuple[Snapshot, list[Callback]]) -> None:
        # Outside the lock: a subscriber may read the model. A failing subscriber must not
        # break the streaming thread that delivered the batch.
        snap, subscribers = changed
        for callback in subscribers:
            try:
                callback(snap)
            except Exception:
                log.exception("live subscriber %r failed", callback)

    def _snapshot(self) -> Snapshot:
        rows = self._rows.values() if self._key_index else self._rows
        rows_rate, input_rate, recent = self._rates()
        return Snapshot(
            version=self._version,
            title=self.title,
            state=self._state,
            message=self._message,
            columns=self.columns,
            key_columns=self.key_columns,
            rows=tuple(rows),
            batch_id=self._batch_id,
            rows_total=self._rows_total,
            input_rows_total=self._input_rows_total,
            rows_per_second=rows_rate,
            input_rows_per_second=input_rate,
            recent_rows=recent,
            error_count=self._error_count,
            latest_errors=tuple(self._errors),
            last_update=self._last_update,
            elapsed=(self._ended if self._ended is not None else self._clock()) - self._started,
            reading=self.reading,
            blocking=self.blocking,
            keys_dropped=self._keys_dropped,
            phase=self._phase() if callable(self._phase) else self._phase,
        )


    def _rates(self) -> tuple[float | None, float | None, tuple[int, ...]]:
        now = self._clock()
        while self._arrivals and self._arrivals[0][0] < now - HISTORY_SECONDS:
            self._arrivals.popleft()
        recent = [0] * HISTORY_SECONDS
        for at, rows, _ in self._arrivals:
            recent[max(0, HISTORY_SECONDS - 1 - int(now - at))] += rows
        if self._state in TERMINAL_STATES:
            return None, None, tuple(recent)
        window = [(rows, records) for at, rows, records in self._arrivals if at >= now - RATE_WINDOW]
        span = max(min(RATE_WINDOW, now - self._started), 1.0)
        return (sum(r for r, _ in window) / span, sum(n for _, n in window) / span, tuple(recent))


def _error_line(entry: Any) -> str:
    if isinstance(entry, dict):
        return f"partition {entry['PARTITION']}, offset {entry['OFFSET']}: {entry['MESSAGE']}"
    return str(entry)


def _hashable(value: Any) -> Any:
    """Keys can be STRUCTs (dicts) or ARRAYs (lists); make them usable as dict keys."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
