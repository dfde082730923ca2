"""Build: a QueryPlan -> Spark frames (decoding, expressions, joins, aggregation)."""

from .query import Built, RawReader, build, select_over_frame
from .retract import TableState
from .windowed import WindowState

__all__ = ["Built", "RawReader", "TableState", "WindowState", "build", "select_over_frame"]
