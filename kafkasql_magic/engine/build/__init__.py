"""Build: a QueryPlan -> Spark frames (decoding, expressions, joins, aggregation)."""

from .batch_store import BatchStore
from .query import Built, RawReader, analysed, build, select_over_frame
from ..table_aggregate.batch_spark import TableState
from ..window.windowed_spark import WindowState

__all__ = ["BatchStore", "Built", "RawReader", "TableState", "WindowState", "analysed", "build", "select_over_frame"]
