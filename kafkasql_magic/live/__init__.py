"""Live display of running push queries: a pure-Python model and an ipywidgets view.

`LiveView` is imported lazily so that code needing only the model (the runtime, tests,
scripts) does not pay for importing ipywidgets.
"""

from __future__ import annotations

from .model import STATES, TERMINAL_STATES, LiveModel, Snapshot
from .render import format_cell

__all__ = ["LiveModel", "LiveView", "Snapshot", "STATES", "TERMINAL_STATES", "format_cell"]


def __getattr__(name: str):
    if name == "LiveView":
        from .view import LiveView

        return LiveView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
