"""A persistent query whose Spark query fails because its checkpoint's state no longer fits
stops with our message (Spark's error kept as its cause) instead of retrying. No Spark session."""

from __future__ import annotations

import threading

from kafkasql_magic.errors import StatementError
from kafkasql_magic.sinks.runner import PersistentQuery


class _Failing:
    """A Spark query that fails as Spark does when a stateful step's state schema changed."""

    def __init__(self, error: Exception):
        self.error = error
        self.isActive = False

    def awaitTermination(self, timeout):
        raise self.error


def test_sparks_state_refusal_stops_the_query_with_what_to_do():
    spark_error = RuntimeError("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match "
                               "existing state key schema.")
    query = PersistentQuery("CTAS_T_1", "TABLE", "CREATE TABLE t AS ...", None, None, None, sources=[], log=None,
                            checkpoint="/state/CTAS_T_1", trigger_interval="1 second", backoff=(0.01, 0.01))
    query._query = _Failing(spark_error)
    watcher = threading.Thread(target=query._watch, daemon=True)
    watcher.start()
    watcher.join(timeout=10)
    assert not watcher.is_alive()  # stopped: no retry can pass
    assert isinstance(query.failure, StatementError) and query.failure.__cause__ is spark_error
    assert query.state == "ERROR"
    assert str(query.failure).startswith(
        "Query CTAS_T_1 cannot resume from its checkpoint: the layout of its state changed since the checkpoint "
        "was written (Spark reports STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE).")
    assert str(query.failure).endswith("/state/CTAS_T_1 (EXPLAIN CTAS_T_1 shows it).")
