"""kafkasql_magic: streaming SQL over Kafka in Jupyter, on Apache Spark.

    %load_ext kafkasql_magic
    %%kstream
    SELECT * FROM orders EMIT CHANGES;

or from Python: `kafkasql_magic.connect(bootstrap_servers=...).sql(...)`.
"""

from .errors import KafkaError, KStreamError, QueryTimeout, SqlSyntaxError, StatementError

__version__ = "0.1.0"


def __getattr__(name):
    """`Session` and `connect` load pandas and Spark's Python side: import them on first use,
    so Spark's Python workers (which import this package to read Kafka) start fast."""
    if name in ("Session", "connect"):
        from . import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython):
    from .magic import KStreamMagics

    magics = KStreamMagics(shell=ipython)
    ipython.register_magics(magics)
    magics.start_spark()  # in the background: the first query waits less


def unload_ipython_extension(ipython):
    from .magic import unload

    unload(ipython)


__all__ = [
    "KStreamError", "SqlSyntaxError", "StatementError", "KafkaError", "QueryTimeout",
    "Session", "connect", "load_ipython_extension", "unload_ipython_extension",
]
