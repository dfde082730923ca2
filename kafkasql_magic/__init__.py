"""kafkasql_magic: streaming SQL over Kafka in Jupyter, on Apache Spark.

    %load_ext kafkasql_magic
    %%kstream
    SELECT * FROM orders EMIT CHANGES;

or from Python: `kafkasql_magic.connect(bootstrap_servers=...).sql(...)`.
"""

from .errors import KafkaError, KStreamError, QueryTimeout, RecordError, SqlSyntaxError, StatementError
from .session import Session, connect

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .magic import KStreamMagics

    ipython.register_magics(KStreamMagics)


def unload_ipython_extension(ipython):
    from .magic import stop_all

    stop_all()


__all__ = [
    "KStreamError", "SqlSyntaxError", "StatementError", "KafkaError", "QueryTimeout", "RecordError",
    "Session", "connect", "load_ipython_extension", "unload_ipython_extension",
]
