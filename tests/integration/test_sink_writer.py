"""The `kafkasql_sink` writer against the real embedded broker, read back with confluent-kafka."""

from __future__ import annotations

import datetime as dt
import json
import textwrap

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce


def read_back(broker, topic, count, timeout=30):
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count,
                            timeout_s=timeout, until_end=False)
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


def copy_stream(spark, broker, source, sink, tmp_path, columns):
    df = (spark.readStream.format("kafkasql").option("bootstrap.servers", broker.bootstrap_servers)
          .option("topic", source).option("startingOffsets", "earliest").load())
    query = (df.select(*columns).writeStream.format("kafkasql_sink")
             .option("bootstrap.servers", broker.bootstrap_servers).option("topic", sink)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    except StreamingQueryException:
        pass  # the caller inspects query.exception()
    return query


def test_stream_copies_keys_values_headers_timestamps_partitions(spark, broker, new_topic, tmp_path):
    source, sink = new_topic(3), new_topic(3)
    base = 1_700_000_000_000
    records = [{"key": None if i == 4 else f"k{i}".encode(), "value": None if i == 5 else f"v{i}".encode(),
                "headers": [("h", f"x{i}".encode()), ("h", None), ("n", b"\x00\xff")] if i % 2 else [],
                "partition": i % 3, "timestamp": base + i * 1000} for i in range(30)]
    produce(broker.bootstrap_servers, source, records)
    query = copy_stream(spark, broker, source, sink, tmp_path,
                        ["key", "value", "headers", "timestamp", "partition"])
    assert query.exception() is None
    got = read_back(broker, sink, 30)
    want = sorted(records, key=lambda r: (r["partition"], r["timestamp"]))
    assert [(r["key"], r["value"], r["headers"], r["partition"], r["timestamp"]) for r in got] == \
        [(r["key"], r["value"], r["headers"], r["partition"], r["timestamp"]) for r in want]


def test_value_only_frame_gets_producer_partitioning_and_timestamp(spark, broker, new_topic):
    topic = new_topic(2)
    before = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    df = spark.createDataFrame([(f"v{i}".encode(),) for i in range(10)], "value binary")
    df.write.format("kafkasql_sink").option("bootstrap.servers", broker.bootstrap_servers) \
        .option("topic", topic).mode("append").save()
    got = read_back(broker, topic, 10)
    assert sorted(r["value"] for r in got) == sorted(f"v{i}".encode() for i in range(10))
    assert all(r["key"] is None and r["headers"] == [] and r["timestamp"] >= before - 1000 for r in got)


def test_delivery_failure_fails_the_batch(spark, broker, new_topic, tmp_path):
    source, sink = new_topic(1), new_topic(1)
    produce(broker.bootstrap_servers, source, [{"value": b"x"}])
    query = copy_stream(spark, broker, source, sink, tmp_path,
                        ["value", F.lit(7).alias("partition")])  # the sink has partition 0 only
    assert query.exception() is not None
    assert f"to topic {sink!r}" in str(query.exception())  # refused at produce() or in its delivery report
    assert "Unknown partition" in str(query.exception())


CLUSTER_SCRIPT = textwrap.dedent("""
    import json, sys, tempfile
    bootstrap, source, sink = sys.argv[1:4]
    df = (spark.readStream.format("kafkasql").option("bootstrap.servers", bootstrap).option("topic", source)
          .option("startingOffsets", "earliest").option("maxRecordsPerPartition", "100").load())
    q = (df.selectExpr("key", "value", "headers", "timestamp", "partition").writeStream
         .format("kafkasql_sink").option("bootstrap.servers", bootstrap).option("topic", sink)
         .option("checkpointLocation", tempfile.mkdtemp()).trigger(availableNow=True).start())
    q.awaitTermination(180)
    pids = spark.sparkContext.parallelize(range(8), 8).map(lambda _: __import__("os").getpid()).distinct().count()
    print("RESULT " + json.dumps({"error": str(q.exception()) if q.exception() else None, "worker_pids": pids}))
""")


@pytest.mark.cluster
def test_writes_from_executor_jvms(broker, new_topic, executor_cluster):
    source, sink = new_topic(2), new_topic(2)
    produce(broker.bootstrap_servers, source,
            [{"key": str(i).encode(), "value": f"v{i}".encode(), "partition": i % 2,
              "headers": [("i", str(i).encode())]} for i in range(600)])
    out = executor_cluster(CLUSTER_SCRIPT, broker.bootstrap_servers, source, sink, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc={out.returncode})\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["error"] is None and result["worker_pids"] >= 2
    got = read_back(broker, sink, 600)
    assert sorted((r["key"], r["value"], r["partition"], r["headers"][0][1]) for r in got) == \
        sorted((str(i).encode(), f"v{i}".encode(), i % 2, str(i).encode()) for i in range(600))
