"""Kafka access: the Spark Python data source `kafkasql` and admin helpers (confluent-kafka).

Importing this package does not import PySpark; `register(spark)` does.
"""


def register(spark):
    """Register the `kafkasql` data source with `spark` (once per session)."""
    from kafkasql_magic.kafka.source import register as _register

    return _register(spark)


def __getattr__(name):
    if name in ("KafkaSqlDataSource", "SCHEMA"):
        from kafkasql_magic.kafka import source

        return getattr(source, name)
    raise AttributeError(name)


__all__ = ["register", "KafkaSqlDataSource", "SCHEMA"]
