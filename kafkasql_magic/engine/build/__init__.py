"""Build: a QueryPlan -> Spark frames (decoding, expressions, joins, aggregation)."""

from .query import Built, RawReader, build, select_over_frame

__all__ = ["Built", "RawReader", "build", "select_over_frame"]
