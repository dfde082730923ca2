"""What a `%%kstream` cell shows while its statements wait: Spark starting, then a LIMIT query's
columns and status line, in one display that is cleared when the statements end."""

from __future__ import annotations

from typing import Any, Callable


class CellFeedback:
    """What a cell shows while its statements wait (a `Session.feedback`): Spark starting, with
    the seconds so far, then a LIMIT query's columns and status line (its live view, without a
    Stop button: Interrupt ends it). All in one display, cleared when the statements end, so the
    result (or the error) is what stays."""

    def __init__(self, display: Callable[..., Any]):
        self._display = display  # IPython's display(); only the magic imports IPython
        self._handle = None
        self._shown = None

    def _show(self, shown) -> None:
        if self._handle is None:
            self._handle = self._display(shown, display_id=True)
        else:
            self._handle.update(shown)
        self._close_shown()
        self._shown = shown

    def spark_starting(self, since: float, *, background: bool) -> None:
        from .view import StartingView

        self._show(StartingView(since, background=background))

    def query_waiting(self, query) -> None:
        from .view import LiveView

        self._show(LiveView(query.model, on_stop=query.stop))

    def _close_shown(self) -> None:
        if self._shown is not None:
            self._shown.close()
            self._shown = None

    def close(self) -> None:
        self._close_shown()
        if self._handle is not None:
            self._handle.update({}, raw=True)
            self._handle = None
