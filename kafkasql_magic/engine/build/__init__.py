"""Build: a QueryPlan -> Spark frames (decoding, expressions, joins, aggregation)."""

from .query import Built, RawReader, build, select_over_frame
from .retract import TableState
from .windowed import WindowState
from .window_store import WindowStore

__all__ = ["Built", "RawReader", "TableState", "WindowState", "WindowStore", "build", "select_over_frame"]
