"""A statement's first contact with the broker, within the statement's timeout.

Without it, a statement against an address where nothing listens runs into every admin call
Spark's planning makes (each with its own timeout) and ends late, with Spark's
AnalysisException and a traceback. One light request (DescribeCluster) answers "is anyone
there" first, and a silent address ends the statement with the project's KafkaError in time.
"""

from __future__ import annotations

from kafkasql_magic.kafka import admin

#: The shortest wait worth making (a statement timeout below it still gets this long).
MIN_WAIT = 0.5


def ensure_reachable(bootstrap: str, timeout: float | None, conf=None) -> None:
    """Raise KafkaError when no broker at `bootstrap` answers within `timeout` seconds (the
    admin default when longer or None). One second of the budget is kept for the answer."""
    from confluent_kafka import KafkaException

    limit = admin.DEFAULT_TIMEOUT if timeout is None else min(float(timeout), admin.DEFAULT_TIMEOUT)
    wait = max(MIN_WAIT, limit - 1.0)
    try:
        future = admin.admin_client(bootstrap, conf).describe_cluster(request_timeout=wait)
        admin._result(future, bootstrap, wait)
    except KafkaException as exc:
        if admin._is_unreachable(exc):
            raise admin._unreachable(bootstrap, wait, exc) from None
        # any other answer (e.g. a broker too old for DescribeCluster) means a broker is there
