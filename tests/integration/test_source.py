"""The `kafkasql` Spark source against the real embedded broker (no Kafka mocks)."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
import time
import uuid

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin, offsets, peek
from kafkasql_magic.kafka.arrow_batch import read_range
from kafkasql_magic.kafka.offsets import EndOffsets, fair_share, split_ranges
from kafkasql_magic.kafka.source import KafkaStreamReader, SourceOptions, register
from kafkasql_magic.kafka.producer import produce


def opts(broker, topic, **extra):
    return {"bootstrap.servers": broker.bootstrap_servers, "topic": topic, **extra}


def batch(spark, broker, topic, **extra):
    df = spark.read.format("kafkasql").options(**opts(broker, topic, **extra)).load()
    return sorted(df.collect(), key=lambda r: (r.partition, r.offset))


def run_available_now(spark, broker, topic, **extra):
    name = f"m_{uuid.uuid4().hex[:10]}"
    sdf = spark.readStream.format("kafkasql").options(**opts(broker, topic, **extra)).load()
    q = sdf.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    assert q.awaitTermination(120), "availableNow query did not finish"
    rows = spark.sql(f"SELECT * FROM {name}").collect()
    return rows, [p["numInputRows"] for p in q.recentProgress]


def stream_reader(broker, topic, **extra) -> KafkaStreamReader:
    return KafkaStreamReader(SourceOptions.parse(opts(broker, topic, **extra), streaming=True))


def read_all(reader, start, end):
    rows = []
    for rng in reader.partitions(start, end):
        for rb in read_range(rng):
            rows.extend(rb.to_pylist())
    return rows


def at(stream_offsets) -> dict[int, int]:
    """The partitions' offsets of a stream's offsets (the topic id they also carry left out)."""
    return offsets.from_json(stream_offsets)


def admin_topic_id(bootstrap, topic):
    from kafkasql_magic.kafka import identity

    return identity.describe(bootstrap, topic).topic_id


def listed_end(broker, topic, partition=0):
    return admin.list_offsets(broker.bootstrap_servers, topic, [partition], "latest")[partition][0]


def produce_bulk(broker, topic, n, partitions=1, **rec):
    """n records in one call, default batching, no flush in between (the quirk's trigger)."""
    produce(broker.bootstrap_servers, topic,
            ({"key": f"k{i}", "value": f"v{i}", **rec} for i in range(n)),
            create_partitions=partitions)


# ------------------------------------------------------------------------------ columns
def test_columns_keys_values_headers_timestamps(spark, broker, new_topic):
    topic = new_topic(1)
    ts = 1_700_000_000_123
    records = [
        {"key": b"\x00\x01", "value": b"bytes", "timestamp": ts,
         "headers": [("a", b"1"), ("b", b"2"), ("a", b"3")]},          # order + duplicates
        {"key": "text", "value": "h\u00e9", "timestamp": ts + 1,
         "headers": [("n", None), ("e", b"")]},                          # null + empty value
        {"key": None, "value": None, "timestamp": ts + 2},               # no headers, nulls
        {"value": b"v", "timestamp": ts + 3, "headers": []},
    ]
    produce(broker.bootstrap_servers, topic, records)
    rows = batch(spark, broker, topic)
    assert [r.key for r in rows] == [b"\x00\x01", b"text", None, None]
    assert [r.value for r in rows] == [b"bytes", "h\u00e9".encode(), None, b"v"]
    headers = [[(h.key, h.value) for h in r.headers] for r in rows]
    assert headers == [[("a", b"1"), ("b", b"2"), ("a", b"3")], [("n", None), ("e", b"")], [], []]
    assert all(r.headers is not None for r in rows)
    assert [r.offset for r in rows] == [0, 1, 2, 3]
    assert {(r.topic, r.partition) for r in rows} == {(topic, 0)}
    # session time zone is UTC: naive datetimes are UTC wall-clock, millisecond precision
    expected = dt.datetime(2023, 11, 14, 22, 13, 20, 123000)
    assert [r.timestamp for r in rows] == [expected + dt.timedelta(milliseconds=i) for i in range(4)]
    schema = spark.read.format("kafkasql").options(**opts(broker, topic)).load().schema
    assert schema.simpleString() == ("struct<key:binary,value:binary,headers:array<struct<key:string,"
                                     "value:binary>>,topic:string,partition:int,offset:bigint,"
                                     "timestamp:timestamp>")


def test_partitions_explicit_and_selected(spark, broker, new_topic):
    topic = new_topic(3)
    produce(broker.bootstrap_servers, topic,
            [{"value": f"{p}-{i}", "partition": p} for p in (0, 1, 2) for i in range(p + 2)])
    rows = batch(spark, broker, topic)
    assert [(r.partition, r.offset, r.value.decode()) for r in rows] == [
        (p, i, f"{p}-{i}") for p in (0, 1, 2) for i in range(p + 2)]
    only = batch(spark, broker, topic, partitions="2,0")
    assert sorted({r.partition for r in only}) == [0, 2] and len(only) == 2 + 4
    with pytest.raises(Exception, match="has no partition"):
        batch(spark, broker, topic, partitions="7")


def test_starting_and_ending_offsets_batch(spark, broker, new_topic):
    topic = new_topic(2)
    produce(broker.bootstrap_servers, topic,
            [{"value": str(i), "partition": p} for p in (0, 1) for i in range(10)])
    got = batch(spark, broker, topic, startingOffsets='{"0": 3, "1": -2}',
                endingOffsets='{"0": 7, "1": -1}')
    assert [(r.partition, r.offset) for r in got] == [(0, o) for o in range(3, 7)] + [(1, o) for o in range(10)]
    # endingOffsets naming one partition reads only that one (a "seek")
    got = batch(spark, broker, topic, startingOffsets='{"1": 8}', endingOffsets='{"1": 9}')
    assert [(r.partition, r.offset) for r in got] == [(1, 8)]
    assert batch(spark, broker, topic, startingOffsets="latest") == []
    with pytest.raises(Exception, match="Invalid startingOffsets"):
        batch(spark, broker, topic, startingOffsets="{nope")
    with pytest.raises(Exception, match=r"names partitions \[5\]"):
        batch(spark, broker, topic, endingOffsets='{"5": 1}')


def test_splitting_large_ranges_keeps_offsets_exact(spark, broker, new_topic):
    topic = new_topic(1)
    produce_bulk(broker, topic, 500)
    df = spark.read.format("kafkasql").options(**opts(broker, topic, maxRecordsPerPartition="120")).load()
    assert df.rdd.getNumPartitions() == 5
    offsets = sorted(r.offset for r in df.select("offset").collect())
    assert offsets == list(range(500))


# ------------------------------------------------------------------------------ the quirk
def test_quirk_bounded_read_sees_every_record(spark, broker, new_topic):
    topic = new_topic(1)
    produce_bulk(broker, topic, 1000)
    assert listed_end(broker, topic) < 1000, "the broker no longer shows the quirk this test is about"
    rows = batch(spark, broker, topic)
    assert [r.offset for r in rows] == list(range(1000))
    assert [r.value for r in rows] == [f"v{i}".encode() for i in range(1000)]
    assert offsets.watermarks(broker.bootstrap_servers, topic) == {0: (0, 1000)}


def test_quirk_available_now_stream(spark, broker, new_topic):
    topic = new_topic(2)
    produce_bulk(broker, topic, 1000, partitions=2)
    rows, _ = run_available_now(spark, broker, topic, startingOffsets="earliest")
    assert len(rows) == 1000
    by_part = {}
    for r in rows:
        by_part.setdefault(r.partition, []).append(r.offset)
    assert {p: sorted(o) for p, o in by_part.items()} == {p: list(range(len(o))) for p, o in by_part.items()}


def test_quirk_processing_time_stream_sees_records_produced_after_start(spark, broker, new_topic):
    topic = new_topic(1)
    name = f"m_{uuid.uuid4().hex[:10]}"
    sdf = spark.readStream.format("kafkasql").options(**opts(broker, topic, startingOffsets="earliest")).load()
    q = sdf.writeStream.format("memory").queryName(name).trigger(processingTime="200 milliseconds").start()
    try:
        produce_bulk(broker, topic, 1000)
        deadline = time.monotonic() + 90
        count = 0
        while time.monotonic() < deadline:
            count = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
            if count >= 1000:
                break
            time.sleep(0.3)
        time.sleep(1.0)  # a few more triggers: nothing may come twice
        offsets = sorted(r.offset for r in spark.sql(f"SELECT offset FROM {name}").collect())
    finally:
        q.stop()
    assert offsets == list(range(1000))


def test_starting_offsets_latest_is_the_true_end(spark, broker, new_topic):
    topic = new_topic(1)
    produce_bulk(broker, topic, 1000)
    reader = stream_reader(broker, topic, startingOffsets="latest")
    assert at(reader.initialOffset()) == {0: 1000}
    rows, _ = run_available_now(spark, broker, topic, startingOffsets="latest")
    assert rows == []


def test_end_offset_probe_detection_and_cache(broker, new_topic):
    topic = new_topic(1)
    produce_bulk(broker, topic, 300)
    ends = EndOffsets(broker.bootstrap_servers)
    assert ends.latest(topic, [0]) == {0: 300}
    assert ends.quirk_seen and ends.probes == 1
    assert ends.latest(topic, [0]) == {0: 300} and ends.probes == 1  # unchanged: no new probe
    produce_bulk(broker, topic, 50)
    assert ends.latest(topic, [0]) == {0: 350} and ends.probes == 2
    never = EndOffsets(broker.bootstrap_servers, mode="never")
    assert never.latest(topic, [0])[0] < 350 and never.probes == 0
    empty = new_topic(1)
    assert EndOffsets(broker.bootstrap_servers).latest(empty, [0]) == {0: 0}


# ------------------------------------------------------------------------------ admission control
def test_admission_control_available_now_no_duplicates(spark, broker, new_topic):
    topic = new_topic(2)
    produce_bulk(broker, topic, 1000, partitions=2)
    rows, sizes = run_available_now(spark, broker, topic, startingOffsets="earliest",
                                    maxRecordsPerTrigger="300")
    assert len(rows) == 1000
    assert len({(r.partition, r.offset) for r in rows}) == 1000
    assert [s for s in sizes if s] == [300, 300, 300, 100]


def test_read_limits_direct(broker, new_topic):
    topic = new_topic(2)
    produce(broker.bootstrap_servers, topic,
            [{"value": b"x", "partition": p} for p in (0, 1) for _ in range(100 if p == 0 else 4)])
    reader = stream_reader(broker, topic, startingOffsets="earliest", maxRecordsPerTrigger="20")
    assert reader.getDefaultReadLimit() == ReadMaxRows(20)
    start = reader.initialOffset()
    assert at(start) == {0: 0, 1: 0}
    assert at(reader.latestOffset(start, ReadMaxRows(20))) == {0: 16, 1: 4}  # fair: the small one drains
    assert at(reader.latestOffset(start, ReadAllAvailable())) == {0: 100, 1: 4}
    end = reader.latestOffset(start, ReadMaxRows(10))
    assert at(end) == {0: 6, 1: 4}
    rows = read_all(reader, start, end)
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(
        (p, o) for p in (0, 1) for o in range(end[str(p)]))


def test_fair_share_and_split_ranges():
    assert fair_share({0: 100, 1: 4}, 20) == {0: 16, 1: 4}
    even = fair_share({0: 10, 1: 10, 2: 10}, 10)
    assert sum(even.values()) == 10 and max(even.values()) - min(even.values()) == 1
    assert sum(fair_share({0: 5, 1: 5}, 3).values()) == 3
    assert fair_share({0: 0, 1: 7}, 100) == {0: 0, 1: 7}
    assert split_ranges(0, 10, 10, 5) == []
    assert split_ranges(3, 0, 10, 4) == [(3, 0, 3), (3, 3, 6), (3, 6, 10)]


def test_bounded_stream_stops_at_ending_offsets(spark, broker, new_topic):
    topic = new_topic(1)
    produce_bulk(broker, topic, 50)
    rows, _ = run_available_now(spark, broker, topic, startingOffsets='{"0": 10}',
                                endingOffsets='{"0": 20}', maxRecordsPerTrigger="4")
    assert sorted(r.offset for r in rows) == list(range(10, 20))
    reader = stream_reader(broker, topic, startingOffsets="earliest", endingOffsets="latest")
    start = reader.initialOffset()
    produce_bulk(broker, topic, 5)
    assert at(reader.latestOffset(start, ReadAllAvailable())) == {0: 50}  # the end when planned


# ------------------------------------------------------------------------------ topology changes
def test_new_partition_picked_up_from_earliest(broker):
    # Tansu has no CreatePartitions: re-create the (still empty) topic with more partitions.
    bs = broker.bootstrap_servers
    topic = f"grow-{uuid.uuid4().hex[:10]}"
    admin.create_topic(bs, topic, 1)
    reader = stream_reader(broker, topic, startingOffsets="earliest")
    start = reader.initialOffset()
    assert at(start) == {0: 0}
    admin.delete_topic(bs, topic)
    admin.create_topic(bs, topic, 2)
    produce(bs, topic, [{"value": f"{p}", "partition": p} for p in (0, 1, 1)])
    end = reader.latestOffset(start, ReadAllAvailable())
    assert at(end) == {0: 1, 1: 2}
    # nothing was read of the old topic: the stream goes on with the new one, under its id
    assert offsets.topic_id_of(end) == admin_topic_id(bs, topic) != offsets.topic_id_of(start) is not None
    rows = read_all(reader, start, end)
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(0, 0), (1, 0), (1, 1)]


def test_offsets_without_a_topic_id_still_resume(broker, new_topic):
    """Offsets from a checkpoint made before they carried the topic id: read on, id kept after."""
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": f"{i}"} for i in range(10)])
    reader = stream_reader(broker, topic)
    end = reader.latestOffset({"0": 5}, ReadAllAvailable())
    assert at(end) == {0: 10} and offsets.topic_id_of(end) == admin_topic_id(broker.bootstrap_servers, topic)
    rows = read_all(reader, {"0": 5}, end)
    assert [r["value"] for r in rows] == [f"{i}".encode() for i in range(5, 10)]


def test_a_range_the_recreated_topic_cannot_fill_stops_without_waiting_out_the_idle_timeout(broker):
    """Ranges planned on the old topic, read after it was re-created with fewer records: one
    whose start is past the new log's end (found at its end-of-log), one that reads the new
    topic's records and waits for more (found when it waits). Either stops with the message,
    from the read itself rather than through its idle timeout."""
    bs = broker.bootstrap_servers
    topic = f"refill-{uuid.uuid4().hex[:10]}"
    admin.create_topic(bs, topic, 1)
    produce(bs, topic, [{"value": f"{i}"} for i in range(100)])
    reader = stream_reader(broker, topic, startingOffsets="earliest")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    admin.delete_topic(bs, topic)
    admin.create_topic(bs, topic, 1)
    produce(bs, topic, [{"value": f"new {i}"} for i in range(20)])
    for begin, where in (({**start, "0": 50}, 50), (start, 0)):
        (rng,) = reader.partitions(begin, end)
        with pytest.raises(KafkaError) as info:
            list(reader.read(rng))
        assert str(info.value).startswith(f"Topic '{topic}' was deleted or re-created while the query read "
                                          f"it (partition 0 at offset {where}): ")
        assert info.value.__context__ is None, "the read ended through its idle timeout"


def test_unknown_and_deleted_topic_errors(spark, broker, new_topic):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(Exception, match=f"Topic '{missing}' does not exist"):
        batch(spark, broker, missing)
    assert missing not in {t.name for t in admin.list_topics(broker.bootstrap_servers)}  # not auto-created
    sdf = spark.readStream.format("kafkasql").options(**opts(broker, missing)).load()
    q = sdf.writeStream.format("memory").queryName(f"m_{uuid.uuid4().hex[:8]}").start()
    with pytest.raises(Exception, match=f"Topic '{missing}' does not exist"):
        q.awaitTermination(60)
    topic = new_topic(1)
    reader = stream_reader(broker, topic)
    start = reader.initialOffset()
    admin.delete_topic(broker.bootstrap_servers, topic)
    with pytest.raises(KafkaError, match=f"Topic '{topic}' does not exist"):
        reader.latestOffset(start, ReadAllAvailable())


def test_unreachable_broker_is_a_clear_error():
    from kafkasql_magic.local.broker import free_port

    bootstrap = f"127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(KafkaError, match=bootstrap):
        admin.list_topics(bootstrap, timeout=1.5)
    with pytest.raises(KafkaError, match=bootstrap):
        admin.topic_partitions(bootstrap, "x", timeout=1.5)
    assert time.monotonic() - t0 < 15


# ------------------------------------------------------------------------------ admin, peek
def test_admin_helpers(broker):
    bs = broker.bootstrap_servers
    topic = f"adm-{uuid.uuid4().hex[:10]}"
    assert admin.create_topic(bs, topic, 3) is True
    assert admin.create_topic(bs, topic, 3, exist_ok=True) is False
    with pytest.raises(KafkaError, match="already exists"):
        admin.create_topic(bs, topic, 3)
    assert (topic, 3) in admin.list_topics(bs)
    assert admin.topic_partitions(bs, topic) == [0, 1, 2]
    assert admin.describe_topic(bs, topic).partitions == (0, 1, 2)
    assert offsets.watermarks(bs, topic) == {0: (0, 0), 1: (0, 0), 2: (0, 0)}
    assert admin.delete_topic(bs, topic) is True
    assert admin.delete_topic(bs, topic, missing_ok=True) is False
    assert not admin.topic_exists(bs, topic)


def test_peek_fetch_records(broker, new_topic):
    bs = broker.bootstrap_servers
    topic = new_topic(2)
    produce(bs, topic, [{"key": f"k{i}", "value": f"v{i}", "partition": i % 2,
                         "headers": [("h", b"x"), ("h", None)], "timestamp": 1000 + i} for i in range(6)])
    recs = peek.fetch_records(bs, topic, from_beginning=True, limit=None, timeout_s=10)
    assert sorted((r["partition"], r["offset"]) for r in recs) == [(p, o) for p in (0, 1) for o in range(3)]
    first = next(r for r in recs if r["partition"] == 0 and r["offset"] == 0)
    assert first == {"key": b"k0", "value": b"v0", "headers": [("h", b"x"), ("h", None)],
                     "topic": topic, "partition": 0, "offset": 0, "timestamp": 1000}
    assert len(peek.fetch_records(bs, topic, from_beginning=True, limit=4, timeout_s=10)) == 4
    assert peek.fetch_records(bs, topic, from_beginning=True, limit=None, timeout_s=10,
                              partitions=[1], start_offsets={1: 2})[0]["value"] == b"v5"
    # from_beginning=False: only what arrives during the window (the quirk must not replay old records)
    produce_bulk(broker, topic, 100, partitions=2)
    import threading

    timer = threading.Timer(1.0, lambda: produce(bs, topic, [{"value": b"late", "partition": 0}]))
    timer.start()
    try:
        late = peek.fetch_records(bs, topic, from_beginning=False, limit=1, timeout_s=20)
    finally:
        timer.join()
    assert [r["value"] for r in late] == [b"late"]
    with pytest.raises(KafkaError, match="does not exist"):
        peek.fetch_records(bs, f"nope-{uuid.uuid4().hex[:6]}", from_beginning=True, limit=1, timeout_s=2)


def test_register_is_idempotent(spark):
    register(spark)
    register(spark)
    assert spark.read.format("kafkasql") is not None


# ------------------------------------------------------------------------------ executors
CLUSTER_SCRIPT = textwrap.dedent("""
    import json, sys
    bootstrap, topic = sys.argv[1], sys.argv[2]
    df = (spark.read.format("kafkasql").option("bootstrap.servers", bootstrap).option("topic", topic)
          .option("maxRecordsPerPartition", "100").option("jsonValueColumns", '[["n", "INT"]]').load())
    rows = df.selectExpr("partition", "offset", "spark_partition_id() AS sp", "__json_decoded", "__json_0").collect()
    hosts = spark.sparkContext.parallelize(range(8), 8).map(lambda _: __import__("os").getpid()).distinct().count()
    print("RESULT " + json.dumps({"rows": len(rows), "distinct": len({(r.partition, r.offset) for r in rows}),
                                  "worker_pids": hosts, "decoded": sum(r["__json_decoded"] for r in rows),
                                  "n": sum(r["__json_0"] for r in rows)}))
""")


@pytest.mark.cluster
def test_reads_on_executor_jvms(broker, new_topic, executor_cluster):
    topic = new_topic(2)
    produce_bulk(broker, topic, 600, partitions=2, value=b'{"n": 7}')
    out = executor_cluster(CLUSTER_SCRIPT, broker.bootstrap_servers, topic, timeout=240)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc={out.returncode})\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["rows"] == 600 and result["distinct"] == 600
    assert result["worker_pids"] >= 2
    assert result["decoded"] == 600 and result["n"] == 7 * 600  # JSON decoded in the executors' workers
