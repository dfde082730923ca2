"""What a finished query leaves in the notebook: its last state as plain HTML and text.

A saved notebook keeps outputs, not widgets: once a query ends, its live display is replaced by
this, so the file shows the final rows and status instead of "model not found".
"""

from __future__ import annotations

from .model import Snapshot


class FinalState:
    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return {"text/html": self.snapshot.to_html(), "text/plain": self.snapshot.to_text()}
