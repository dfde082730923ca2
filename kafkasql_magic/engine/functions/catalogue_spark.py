"""ksql function name -> Spark expression builder: the tables of every kind of value in one
(`builders_spark` says what a builder gets; a function that fails on a record logs it)."""

from __future__ import annotations

from pyspark.sql import functions as F

from ...errors import StatementError
from . import bytes_spark, collections_spark, json_spark, numbers_spark, text_spark, time_spark
from .builders_spark import Function, simple

#: Functions over any type.
_ANY: dict[str, Function] = {
    "COALESCE": Function(simple(F.coalesce), 1, None),
    "IFNULL": Function(simple(F.coalesce), 2, 2),
    "NULLIF": Function(simple(F.nullif), 2, 2),
    "AS_VALUE": Function(simple(lambda v: v), 1, 1),  # copies a key column into the value: same value here
}

FUNCTIONS: dict[str, Function] = {
    **_ANY, **numbers_spark.FUNCTIONS, **text_spark.FUNCTIONS, **time_spark.FUNCTIONS, **json_spark.FUNCTIONS,
    **collections_spark.FUNCTIONS, **bytes_spark.FUNCTIONS,
}


def lookup(name: str, nargs: int) -> Function:
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise StatementError(f"Can't find any functions with the name '{name}'")
    if nargs < fn.min_args or (fn.max_args is not None and nargs > fn.max_args):
        raise StatementError(f"Function '{name}' does not accept {nargs} argument(s).")
    return fn
