"""The Spark session queries run on: a small local one by default, or the caller's.

ksql semantics need a few SQL settings on any session: case-sensitive names (ksql
distinguishes `id` from ID), NULL instead of errors for bad casts and arithmetic (errors go
to the processing log), last-wins map keys (JSON members matched case-insensitively; jsonb's repeated keys) and UTC.
State of stateful queries lives in RocksDB with changelog checkpointing: Spark's keyed-state API
(`transformWithState`) needs that provider, and a micro-batch's checkpoint then writes what it
changed, not a snapshot of the whole state. A query resumed from a checkpoint keeps the provider
the checkpoint was written with (Spark stores it with the offsets).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

REQUIRED_SQL_CONF = {
    "spark.sql.caseSensitive": "true",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.timeType.enabled": "true",  # ksql TIME columns
    "spark.sql.variant.allowDuplicateKeys": "true",  # jsonb keeps a repeated key's last value
    # keyed state (transformWithState needs RocksDB), each micro-batch's changes checkpointed
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}

LOCAL_CONF = {
    # The JVM's quick compiler only (C1, no C2): a query's generated code, state store and Arrow
    # paths are compiled in a fraction of the CPU, and the work left on the JVM is a small part
    # of a query's (bench/README.md, "The JVM's compilers").
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    # Python workers and keyed-state servers over Unix sockets: a TCP state server takes the first
    # connection to its port, so a local client retrying a port it once knew could hang a query
    "spark.python.unix.domain.socket.enabled": "true",
}


def local_spark(master: str | None = None):
    """A local Spark session bound to loopback (started once per process)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # How long a Python worker waits to connect back to the JVM (PySpark's default: 15 s). On a
    # loaded machine a worker can take longer, and the micro-batch, so the query, failed with
    # CANNOT_OPEN_SOCKET; measured on a 2-core machine at load average 26.
    os.environ.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", "120")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master or os.environ.get("KAFKASQL_SPARK_MASTER", "local[2]"))
    builder = builder.appName("kafkasql_magic")
    for key, value in {**LOCAL_CONF, **REQUIRED_SQL_CONF}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _make_active(spark)
    return prepare(spark)


def _make_active(spark) -> None:
    """Make `spark` the calling thread's active session. A session is active on the thread that
    made it: one started in the background would leave `SparkSession.getActiveSession()` None
    on the kernel's thread, where the notebook's own code asks for it."""
    from pyspark.sql import SparkSession

    SparkSession._activeSession = spark
    SparkSession._get_j_spark_session_class(spark._jvm).setActiveSession(spark._jsparkSession)


log = logging.getLogger(__name__)
_start_lock = threading.Lock()
_background: threading.Thread | None = None
_background_since: float | None = None


def start_in_background(*, show_logs: bool = False) -> bool:
    """Start the local Spark session on a thread of its own (the extension does when it loads),
    so that a kernel's first query finds Spark up or on its way; in a kernel the JVM's own output
    goes to `spark_logs.log_path()` unless `show_logs`. False when Spark runs or a start is under way already. A
    start that fails leaves the next `local_spark()` to try again, and raise what it meets."""
    global _background, _background_since
    with _start_lock:
        if _background is not None or running():
            return False
        _background_since = time.monotonic()
        _background = threading.Thread(target=_start, args=(show_logs,), name="kafkasql-spark-start", daemon=True)
        _background.start()
    return True


def _start(show_logs: bool) -> None:
    from .spark_logs import starting_spark

    try:
        with starting_spark(show=show_logs):
            local_spark()
    except Exception:  # the foreground start tries again and shows this failure where it matters
        log.debug("starting Spark in the background failed", exc_info=True)


def background_start() -> float | None:
    """When the background start still under way began (`time.monotonic()`), else None."""
    thread = _background
    return _background_since if thread is not None and thread.is_alive() else None


def wait_for_background_start() -> None:
    """Wait until a background start (if any) ended: two starts at once would race."""
    thread = _background
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def running() -> bool:
    """Whether this process has a Spark session up (its JVM started)."""
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def prepare(spark):
    """Apply the SQL settings ksql semantics need and register the Kafka source and sink and
    the load generators' source."""
    from . import loadgen
    from .kafka import writer
    from .kafka.source import register

    for key, value in REQUIRED_SQL_CONF.items():
        spark.conf.set(key, value)
    register(spark)
    writer.register(spark)
    loadgen.register(spark)
    return spark
