"""The ipywidgets face of a LiveModel.

Model changes arrive on Spark's streaming thread, so this view only sets widget traits (which
ipywidgets syncs from any thread) and never uses `with output:` or display(). Table re-renders
are throttled: a fast stream must not flood the frontend, yet the latest snapshot is always
shown eventually.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import ipywidgets as widgets

from . import render, static
from .chart import ChartSpec, chart_svg
from .model import LiveModel, Snapshot

_TERMINAL_LABELS = {"STOPPED": "Stopped", "FINISHED": "Finished", "FAILED": "Failed"}


class LiveView:
    """Status line, rows table, latest errors and a Stop button over one model.

    `min_interval` (seconds) bounds how often the widgets are re-rendered; 0 renders every
    change synchronously, which keeps tests deterministic. State changes render at once.
    `chart` (`--chart`) draws the rows as a chart above the table.
    """

    def __init__(
        self, model: LiveModel, on_stop: Callable[[], object], *, min_interval: float = 0.25,
        chart: ChartSpec | None = None,
    ):
        self.model = model
        self.chart_spec = chart
        self.chart = widgets.HTML() if chart is not None else None
        self.min_interval = min_interval
        self._on_stop = on_stop
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        self.errors = widgets.HTML(layout=widgets.Layout(display="none"))
        self.button = widgets.Button(
            description="Stop", icon="stop", tooltip="Stop this query",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.button.on_click(self._clicked)
        if model.blocking:  # the cell waits for it: a click would only be handled after the cell
            self.button.layout.display = "none"
        self.widget = widgets.VBox(
            [widgets.HBox([self.button, self.status]), *([self.chart] if self.chart else []), self.table, self.errors]
        )
        # The token that pairs this widget with the saved copy the magic shows beside it.
        self.token = self.widget.model_id
        self.widget.add_class(static.live_class(self.token))
        hider = widgets.HTML(static.live_style(self.token), layout=widgets.Layout(display="none"))
        self.widget.children = (*self.widget.children, hider)
        self._lock = threading.Lock()  # guards the fields below
        self._render_lock = threading.Lock()  # one render at a time, always of the latest
        self._latest: Snapshot | None = None
        self._rendered_version = -1
        self._last_render = float("-inf")
        self._timer: threading.Timer | None = None
        self._stop_requested = False
        self._closed = False
        model.subscribe(self._on_change)
        self._on_change(model.snapshot())  # after subscribing, so no change is missed
        threading.Thread(target=self._tick, name="kstream-live-tick", daemon=True).start()

    def _tick(self) -> None:
        """Once a second while the query runs, so rates fall to zero when no batch comes."""
        while not self._closed and not self.model.snapshot().terminal:
            time.sleep(1.0)
            self.model.tick()

    # -- updates (any thread) ---------------------------------------------------------------

    def _on_change(self, snap: Snapshot) -> None:
        with self._lock:
            latest = self._latest
            if self._closed or (latest is not None and snap.version <= latest.version):
                return  # snapshots from racing threads can arrive out of order
            self._latest = snap
            wait = self._last_render + self.min_interval - time.monotonic()
            now = wait <= 0 or latest is None or snap.state != latest.state
            if now and self._timer is not None:
                self._timer.cancel()
                self._timer = None
            elif not now and self._timer is None:
                timer = threading.Timer(wait, self._flush)
                timer.args = (timer,)
                timer.daemon = True
                self._timer = timer
                timer.start()
        if now:
            self._flush()

    def _flush(self, timer: threading.Timer | None = None) -> None:
        with self._render_lock:
            with self._lock:
                if timer is not None and self._timer is timer:
                    self._timer = None
                snap = self._latest
                if snap is None or snap.version == self._rendered_version:
                    return
                self._rendered_version = snap.version
                self._last_render = time.monotonic()
            self._render(snap)

    def _render(self, snap: Snapshot) -> None:
        self.status.value = render.status_html(snap)
        self.table.value = render.table_html(snap)
        if self.chart is not None:
            self.chart.value = chart_svg(self.chart_spec, snap.columns, snap.rows)
        self.errors.value = render.errors_html(snap)
        self.errors.layout.display = None if snap.latest_errors else "none"
        self._render_button(snap)

    def _render_button(self, snap: Snapshot) -> None:
        if snap.terminal:
            self.button.disabled, self.button.description = True, _TERMINAL_LABELS[snap.state]
        elif self._stop_requested:
            self.button.disabled, self.button.description = True, "Stopping…"
        else:
            self.button.disabled, self.button.description = False, "Stop"

    # -- the Stop button (kernel thread) ------------------------------------------------------

    def _clicked(self, _button=None) -> None:
        with self._lock:
            snap = self._latest
            if self._stop_requested or (snap is not None and snap.terminal):
                return
            self._stop_requested = True
        self._refresh_button()
        try:
            self._on_stop()
        except Exception as exc:  # let the user retry; ipywidgets logs the traceback
            with self._lock:
                self._stop_requested = False
            self._refresh_button()
            self.button.tooltip = f"Stop failed: {exc}"
            raise

    def _refresh_button(self) -> None:
        # Under the render lock so a concurrent render cannot leave a stale label behind.
        with self._render_lock:
            with self._lock:
                snap = self._latest
            if snap is not None:
                self._render_button(snap)

    # -- display and lifetime ---------------------------------------------------------------

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        data = self.widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs) or {}
        data["text/plain"] = self.model.to_text()  # for frontends without widgets
        return data

    def __repr__(self) -> str:
        return self.model.to_text()

    def close(self) -> None:
        """Stop following the model; the widgets keep showing the last rendering."""
        self.model.unsubscribe(self._on_change)
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


class StartingView:
    """The status line of a cell that waits for the Spark session to start (a kernel's first
    query), its elapsed time ticking once a second until `close()`. `since` is when the start
    began on `clock`; `background`: the start began when the extension loaded."""

    def __init__(self, since: float, *, background: bool, clock: Callable[[], float] = time.monotonic,
                 interval: float = 1.0):
        self.since = since
        self.background = background
        self._clock = clock
        self._closed = threading.Event()
        self.widget = widgets.HTML(self.html())
        if interval > 0:
            threading.Thread(target=self._tick, args=(interval,), name="kstream-spark-starting", daemon=True).start()

    def html(self) -> str:
        return render.starting_html(self._clock() - self.since, background=self.background)

    def text(self) -> str:
        return render.starting_text(self._clock() - self.since, background=self.background)

    def _tick(self, interval: float) -> None:
        while not self._closed.wait(interval):
            self.widget.value = self.html()

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        data = self.widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs) or {}
        data["text/plain"] = self.text()
        return data

    def close(self) -> None:
        self._closed.set()
