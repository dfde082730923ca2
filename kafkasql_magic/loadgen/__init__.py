"""Materialize's load generators: sources that make their own records, read by a Spark Python
data source of their own (`counter.py` the rules, pure; `source_spark.py` the data source).

Importing this package does not import PySpark; `register(spark)` does.
"""


def register(spark):
    """Register the load generators' data source with `spark` (once per session)."""
    from kafkasql_magic.loadgen.source_spark import register as _register

    return _register(spark)


__all__ = ["register"]
