"""A persistent query at a glance: id, status, records in/out per second, lag, processing-log
count, sink topic and a Terminate button.

`QueryCardModel` is plain Python: `update(...)` takes running totals (from any thread); rates are
counted here from how the totals move, so they are current and fall to zero when the query
idles. `follow` keeps a model current from a query's plain status object (the sinks manager's
`PersistentQuery.status()`), polling in a background thread until the query ends. `QueryCard`
is its ipywidgets face; Terminate calls `on_terminate()`.
"""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import ipywidgets as widgets

from .render import format_rate

RATE_WINDOW = 5.0
ENDED = frozenset({"TERMINATED", "FAILED", "ERROR"})
POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class QueryCardState:
    query_id: str
    status: str = "RUNNING"
    sink_topic: str | None = None
    records_in: int = 0
    records_out: int = 0
    lag: int | None = None
    errors: int = 0
    message: str | None = None
    in_per_second: float | None = 0.0
    out_per_second: float | None = 0.0


class QueryCardModel:
    def __init__(self, query_id: str, *, sink_topic: str | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._state = QueryCardState(query_id, sink_topic=sink_topic)
        self._history: list[tuple[float, int, int]] = [(clock(), 0, 0)]
        self._subscribers: list[Callable[[QueryCardState], None]] = []

    @property
    def state(self) -> QueryCardState:
        with self._lock:
            return self._state

    def update(self, **fields) -> QueryCardState:
        """Set any of status, records_in, records_out (totals), lag, errors, message."""
        with self._lock:
            state = replace(self._state, **fields)
            now = self._clock()
            self._history.append((now, state.records_in, state.records_out))
            self._history = [h for h in self._history if h[0] >= now - RATE_WINDOW] or self._history[-1:]
            if state.status in ENDED:
                state = replace(state, in_per_second=None, out_per_second=None)
            else:
                start, span = self._history[0], max(now - self._history[0][0], 1.0)
                state = replace(state, in_per_second=(state.records_in - start[1]) / span,
                                out_per_second=(state.records_out - start[2]) / span)
            self._state = state
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(state)
        return state

    def subscribe(self, callback: Callable[[QueryCardState], None]) -> None:
        with self._lock:
            self._subscribers.append(callback)


def apply_status(model: QueryCardModel, status) -> QueryCardState:
    """One poll: a status object with status, records_in, records_out, lag, errors, message."""
    return model.update(status=status.status, records_in=status.records_in, records_out=status.records_out,
                        lag=status.lag, errors=status.errors, message=status.message)


def follow(model: QueryCardModel, poll: Callable[[], object], *, interval: float = POLL_INTERVAL,
           stop: threading.Event | None = None) -> threading.Thread:
    """Update `model` from `poll()` every `interval` seconds until the query ends (or `stop`)."""
    stop = stop or threading.Event()

    def run() -> None:
        while not stop.is_set():
            if apply_status(model, poll()).status in ENDED:
                return
            stop.wait(interval)

    thread = threading.Thread(target=run, name=f"kstream-card-{model.state.query_id}", daemon=True)
    thread.start()
    return thread


def card_html(state: QueryCardState) -> str:
    esc = html.escape
    fields = [("status", state.status), ("in/s", format_rate(state.in_per_second)),
              ("out/s", format_rate(state.out_per_second)), ("records in", f"{state.records_in:,}"),
              ("records out", f"{state.records_out:,}"), ("lag", "–" if state.lag is None else f"{state.lag:,}"),
              ("processing log", f"{state.errors:,}")]
    cells = " &nbsp;·&nbsp; ".join(f'<span style="white-space:nowrap">{esc(k)}: <b>{esc(v)}</b></span>'
                                   for k, v in fields)
    cells += " &nbsp;·&nbsp; " + _sink_html(state.sink_topic or "–")
    message = f'<div style="color:#c62828">{esc(state.message)}</div>' if state.message else ""
    return (f'<div class="kstream-query-card" style="font-variant-numeric:tabular-nums">'
            f'<code>{esc(state.query_id)}</code> &nbsp; {cells}{message}</div>')


#: how wide the sink's name may be before it ends in an ellipsis
SINK_WIDTH = "24em"


def _sink_html(name: str) -> str:
    """`sink: name` on one line whatever the name's length: a long one ends in an ellipsis (the
    whole name on hover), so the card's line never wraps inside it."""
    esc = html.escape
    return (f'<span class="kstream-sink" style="white-space:nowrap;display:inline-flex;max-width:100%">sink:&nbsp;'
            f'<b title="{esc(name)}" style="display:inline-block;max-width:{SINK_WIDTH};overflow:hidden;'
            f'text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom">{esc(name)}</b></span>')


class QueryCard:
    """The card's widgets; `widget` is the whole card."""

    def __init__(self, model: QueryCardModel, on_terminate: Callable[[], object]):
        self.model = model
        self.info = widgets.HTML(card_html(model.state), layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.terminate = widgets.Button(description="Terminate", icon="stop",
                                        layout=widgets.Layout(width="auto", flex="0 0 auto"))  # never squeezed
        self.terminate.on_click(lambda _: on_terminate())
        self.widget = widgets.HBox([self.terminate, self.info])
        model.subscribe(self._render)
        self._render(model.state)

    def _render(self, state: QueryCardState) -> None:
        self.info.value = card_html(state)
        self.terminate.disabled = state.status in ENDED

    def _repr_mimebundle_(self, **kwargs):
        data = self.widget._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = f"<query {self.model.state.query_id} {self.model.state.status}>"
        return data
