"""What a `%%kstream` cell shows while its statements run: a push query's live view from the moment
it is planned (its columns and status line, the phase it is in: being prepared, Spark starting),
or Spark starting for any other statement, in one display per cell."""

from __future__ import annotations

import time
from typing import Any, Callable

from . import render


class CellFeedback:
    """What a cell shows while its statements run (a `Session.feedback`).

    A push query's live view is shown as soon as its statement is planned (`query_starting`), long
    before Spark has prepared and started it; the query then fills in that same view. A LIMIT
    query's view has no Stop button (Interrupt ends it) and goes when the statements end, so the
    result (or the error) is what stays; a live query's view stays (`close(keep=query)`). Without a
    query, Spark starting is said with the seconds so far. `chart` is the magic's `--chart`, drawn
    above a live query's table (a ChartError, raised before the query starts, names a wrong column)."""

    def __init__(self, display: Callable[..., Any], *, chart: str | None = None):
        self._display = display  # IPython's display(); only the magic imports IPython
        self._chart = chart
        self._handle = None
        self._shown = None
        self._model = None  # the model of the query on show
        self._query = None  # its PushQuery, once started

    def _show(self, shown, bundle: dict) -> None:
        if self._handle is None:
            self._handle = self._display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)
        self._close_shown()
        self._shown = shown

    def spark_starting(self, since: float, *, background: bool) -> None:
        if self._model is not None:  # the query's own status line says it, its seconds ticking
            self._model.set_phase(lambda: render.starting_text(time.monotonic() - since, background=background))
            return
        from .view import StartingView

        view = StartingView(since, background=background)
        self._show(view, view._repr_mimebundle_())

    def spark_started(self) -> None:
        if self._model is not None:
            self._model.set_phase(render.PREPARING)

    def query_starting(self, model) -> None:
        """Show a push query's view, as its statement is planned (`runtime.live_model`)."""
        from .chart import parse_chart
        from .view import LiveView

        chart = parse_chart(self._chart, model.columns) if self._chart and not model.blocking else None
        view = LiveView(model, on_stop=self._stop, chart=chart)
        bundle = view._repr_mimebundle_()
        bundle["text/html"] = ""  # a viewer without widgets shows the saved copy (magic) instead of stale text
        self._show(view, bundle)
        self._model = model

    def query_started(self, query) -> None:
        """The query the view on show belongs to, now running: its Stop stops it, and it is its view."""
        if self._model is query.model:
            self._query = query
            query.view, query.chart = self._shown, self._shown.chart_spec

    def _stop(self) -> None:
        if self._query is not None:
            self._query.stop_soon()

    def _close_shown(self) -> None:
        if self._shown is not None:
            self._shown.close()
            self._shown = None

    def close(self, keep=None):
        """End the feedback: what is shown goes, except `keep`'s view (a live query, still
        running), whose display handle is returned (else None)."""
        if keep is not None and self._query is keep and self._handle is not None:
            handle, self._handle, self._shown = self._handle, None, None
            return handle
        self._close_shown()
        if self._handle is not None:
            self._handle.update({}, raw=True)
            self._handle = None
        return None
