"""What the notebook file keeps of a push query: its latest state as plain HTML and text.

A saved notebook keeps outputs, not widgets, so a live widget reopened without its kernel shows
"Loading widget..." or "model not found". While a query runs, an output beside the widget (the
saved copy) holds its latest state, refreshed every few seconds; CSS that only the live widget
carries hides that copy, so the page shows the widget alone while anything without the widget (a
reopened or exported notebook) shows the copy, and the copy's own CSS hides the widget's leftover
output. Re-rendering the widget's output itself would rebuild the widget on every update. Once the
query ends, the widget's output is replaced by `FinalState` and the copy is emptied. Both draw
the query's chart (`--chart`) above the table, as the widget does.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from . import render
from .chart import ChartSpec, chart_svg
from .model import LiveModel, Snapshot

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SAVE_INTERVAL = 3.0  # seconds: how stale a notebook saved while its query runs can be
APPEAR_DELAY = "1.5s"  # the live widget renders a moment after its output arrives: no flash of the copy


def snapshot_html(snap: Snapshot, chart: ChartSpec | None = None) -> str:
    """The state as static HTML: status line, the chart (if any) above the table, errors."""
    return render.to_html(snap, "" if chart is None else chart_svg(chart, snap.columns, snap.rows))


class FinalState:
    def __init__(self, snapshot: Snapshot, chart: ChartSpec | None = None):
        self.snapshot, self.chart = snapshot, chart

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return {"text/html": snapshot_html(self.snapshot, self.chart), "text/plain": self.snapshot.to_text()}


def live_class(token: str) -> str:
    return f"kstream-live-{token}"


def saved_class(token: str) -> str:
    return f"kstream-saved-{token}"


def live_style(token: str) -> str:
    """Carried by the live widget: while it is on the page, its saved copy (and, in JupyterLab and
    Notebook 7, the copy's output row) is hidden."""
    saved = saved_class(token)
    return f"<style>.{saved}{{display:none}}.jp-OutputArea-child:has(.{saved}){{display:none}}</style>"


def saved_html(snap: Snapshot, token: str, saved_at: float | None = None, chart: ChartSpec | None = None) -> str:
    """The saved copy: the state, when it was taken, and the rules a page without the live widget
    needs (the widget's leftover output row hidden; in a running frontend, shown after a delay)."""
    saved, live = saved_class(token), live_class(token)
    # JupyterLab's and Notebook 7's widget renderer is the one output without a data-mime-type
    leftover = (f".jp-OutputArea-child:has(> .jp-OutputArea-output:not([data-mime-type])):not(:has(.{live}))"
                f":has(~ .jp-OutputArea-child .{saved}){{display:none}}")
    appear = (f"@keyframes {saved}-appear{{from{{visibility:hidden}}}}"
              f".lm-Widget .{saved}{{animation:{saved}-appear 0s {APPEAR_DELAY} backwards}}")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(time.time() if saved_at is None else saved_at))
    caption = (f'<div style="color:#757575;font-size:11px">state at {when}, saved while the query ran '
               "(the live view needs the running kernel)</div>")
    return f'<style>{leftover}{appear}</style><div class="{saved}">{snapshot_html(snap, chart)}{caption}</div>'


def saved_bundle(snap: Snapshot, token: str, saved_at: float | None = None, chart: ChartSpec | None = None) -> dict:
    return {"text/html": saved_html(snap, token, saved_at, chart), "text/plain": snap.to_text()}


class SavedCopy:
    """Keeps a running query's saved copy current: `publish(bundle)` at most every `interval`
    seconds when the state changed; `close()` publishes an empty bundle, after which nothing is
    published (the widget's output then holds the final state)."""

    def __init__(self, model: LiveModel, token: str, publish: Callable[[dict], object], *,
                 interval: float = SAVE_INTERVAL, chart: ChartSpec | None = None):
        self.model, self.token, self.interval, self.chart = model, token, interval, chart
        self._publish = publish
        self._lock = threading.Lock()  # a refresh never lands after close()
        self._closed = threading.Event()
        self._published_version = -1

    def bundle(self) -> dict:
        """The copy as it is now (for the first display)."""
        snap = self.model.snapshot()
        self._published_version = snap.version
        return saved_bundle(snap, self.token, chart=self.chart)

    def start(self) -> None:
        threading.Thread(target=self._run, name="kstream-saved-copy", daemon=True).start()

    def _run(self) -> None:
        while not self._closed.wait(self.interval):
            self.refresh()

    def refresh(self) -> None:
        with self._lock:
            snap = self.model.snapshot()
            if self._closed.is_set() or snap.terminal or snap.version == self._published_version:
                return
            self._published_version = snap.version
            self._publish(saved_bundle(snap, self.token, chart=self.chart))

    def close(self) -> None:
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            self._publish({})
