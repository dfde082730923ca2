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

from .spark_exit import CRASH_REPORT

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
    # The compiled code's cache at the size the JVM gives both compilers: with the quick one only
    # it would be 48 MB, which a kernel running a few dozen queries fills (seen at 143 s); then the
    # JVM stops compiling, and the next method handle it needs kills it ("Out of space in
    # CodeCache for method handle intrinsic", docs/failures.md). A crash report where
    # `spark_exit` finds it, not in the notebook's folder.
    "spark.driver.extraJavaOptions": ("-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m "
                                      f"-XX:ErrorFile={CRASH_REPORT}"),
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
_background_up = threading.Event()  # set once the background start has a session (or failed)
_query_waiting = threading.Event()  # a query asked for the session: warm up no further


def start_in_background(*, show_logs: bool = False) -> bool:
    """Start the local Spark session on a thread of its own (the extension does when it loads),
    so that a kernel's first query finds Spark up or on its way, then warm it up (`warm_up`); in
    a kernel the JVM's own output goes to `spark_logs.log_path()` unless `show_logs`. False when
    Spark runs or a start is under way already. A start that fails leaves the next
    `local_spark()` to try again, and raise what it meets."""
    global _background, _background_since, _background_up
    with _start_lock:
        if _background is not None or running():
            return False
        _background_since = time.monotonic()
        _background_up = threading.Event()
        _background = threading.Thread(target=_start, args=(show_logs, _background_up),
                                       name="kafkasql-spark-start", daemon=True)
        _background.start()
    return True


def _start(show_logs: bool, up: threading.Event) -> None:
    from .spark_logs import starting_spark

    try:
        with starting_spark(show=show_logs):
            spark = local_spark()
    except Exception:  # the foreground start tries again and shows this failure where it matters
        log.debug("starting Spark in the background failed", exc_info=True)
        return
    finally:
        up.set()
    try:
        warm_up(spark)
    except Exception:  # a query starts its workers itself
        log.debug("warming up Spark's Python workers failed", exc_info=True)


def warm_up(spark) -> None:
    """Do once what a kernel's first query would otherwise wait for (bench/README.md, "Cold
    start"): start the Python workers it needs, holding the Kafka reader's and writer's modules
    (Spark reuses an idle worker), and, unless a query is waiting by then (Run All: on 2 cores the
    two would share the CPU), run one micro-batch of a stream over a Python source into
    foreachBatch (the driver's source worker, the stream's classes and their first compilation,
    the callback server)."""
    parallelism = spark.sparkContext.defaultParallelism
    spark.range(0, parallelism, numPartitions=parallelism).mapInArrow(_import_worker_modules, "id long").collect()
    if not _query_waiting.is_set():
        _one_micro_batch(spark)


def _import_worker_modules(batches):
    from .kafka import source, writer  # noqa: F401  (importing them is the point)

    yield from batches


def _one_micro_batch(spark) -> None:
    """Three values of the load generator's counter through one stream, then stopped."""
    import shutil
    import tempfile

    from .loadgen.counter import FORMAT, Counter

    checkpoint = tempfile.mkdtemp(prefix="kafkasql-warm-up-")
    try:
        reader = spark.readStream.format(FORMAT)
        for key, value in Counter(tick_us=1_000_000, epoch_us=0, up_to=3).options().items():
            reader = reader.option(key, value)
        query = (reader.load().writeStream.foreachBatch(_collect).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        if not query.awaitTermination(120):
            query.stop()
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def _collect(batch, batch_id: int) -> None:
    batch.collect()


def background_start() -> float | None:
    """When the background start still under way began (`time.monotonic()`), else None."""
    thread = _background
    up = thread is None or not thread.is_alive() or _background_up.is_set()
    return None if up else _background_since


def wait_for_background_start() -> None:
    """Wait until a background start (if any) has its session or failed: two starts at once
    would race. Its warm-up goes on beside the caller's query."""
    thread, up = _background, _background_up
    _query_waiting.set()
    if thread is not None and thread is not threading.current_thread():
        while thread.is_alive() and not up.wait(0.2):
            pass


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
