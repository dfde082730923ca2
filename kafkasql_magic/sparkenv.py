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

import os
import sys

REQUIRED_SQL_CONF = {
    "spark.sql.caseSensitive": "true",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.timeType.enabled": "true",  # ksql TIME columns
    "spark.sql.variant.allowDuplicateKeys": "true",  # jsonb keeps a repeated key's last value
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}

LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
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
    return prepare(spark)


def prepare(spark):
    """Apply the SQL settings ksql semantics need and register the Kafka source and sink."""
    from .kafka import writer
    from .kafka.source import register

    for key, value in REQUIRED_SQL_CONF.items():
        spark.conf.set(key, value)
    register(spark)
    writer.register(spark)
    return spark
