"""Sink benchmark: a persistent query re-encoding JSON records to AVRO, against raw consume.

    python bench/sink.py [--records N] [--partitions 4] [--rate 10000] [--seconds 10]
                         [--compare-three-jobs] [--compare-udf-encode] [--out bench/results/sink.json]

On the embedded broker and registry, in one run:
  raw_consume     one process, confluent-kafka `consume(10000)` counting only (the baseline (a)
                  of bench/ingest.py, measured again here on the same topic)
  csas_avro       `CREATE STREAM ... WITH (VALUE_FORMAT='AVRO') AS SELECT * FROM json_stream`
                  over N records already in the topic: rows/s from the query's start until the
                  last record is acknowledged by the broker, and the ratio to raw_consume
  csas_three_jobs (with --compare-three-jobs) the same CSAS over the same records with the
                  earlier micro-batch handling kept here for comparison: the batch cached, then
                  three Spark jobs (failed rows to Arrow, a count, the write)
  csas_udf_encode (with --compare-udf-encode) the same CSAS with the Avro value encoded by an
                  Arrow UDF before the writer (as before the writer encoded it itself)
  latency         records produced at `--rate` per second for `--seconds` into a running CSAS;
                  the sink records carry the input timestamps (the produce time), so a consumer
                  of the sink topic measures produce -> readable in the sink, p50 and p99 (ms)
Spark start-up and Python worker start-up (a warm-up query) are excluded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import machine_facts, make_records, raw_consume, spark_session, write_report  # noqa: E402

COLUMNS = "(id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING, pad STRING)"


def wait_written(query, count: int, timeout: float) -> float:
    """Seconds until `query` wrote `count` records (raises if it stalls or fails)."""
    t0 = time.perf_counter()
    if not query.wait_for_records(count, timeout):
        raise RuntimeError(f"{query.id}: {query.records_out} of {count} records written; {query.failure}")
    return time.perf_counter() - t0


def three_jobs_on_batch(self, batch, batch_id: int) -> None:
    """The micro-batch handling before it became one job (sinks/runner.py up to Nov 2026)."""
    from pyspark.sql import functions as F

    from kafkasql_magic.engine.columns import DROP, ERROR, ORIGIN
    from kafkasql_magic.results import split_batch

    started = time.monotonic()
    batch = batch.persist()
    try:
        failed = batch.where(F.col(ERROR).isNotNull()).select(DROP, ERROR, *ORIGIN)
        errors = split_batch(failed.toArrow(), 0, self.id, self.plan.source.name).errors
        if errors:
            self._log.add(errors)
        good = batch.where(~F.col(DROP))
        count = good.count()
        if count:
            records = self.write.records(good, self.plan.names)
            records.write.format("kafkasql_sink").options(**self.write.options()).mode("append").save()
        self._out += count
        self._out_rate = count / max(time.monotonic() - started, 1e-3)
    finally:
        batch.unpersist()


def csas_rows_per_s(session, sink: str, source: str, n: int) -> float:
    query = session.sql(f"CREATE STREAM {sink} WITH (VALUE_FORMAT='AVRO') AS SELECT * FROM {source};")
    seconds = wait_written(query, n, 3600)
    query.terminate()
    return n / seconds


def latency(bootstrap: str, session, source_topic: str, rate: int, seconds: int) -> dict:
    """p50/p99 of produce -> readable in the sink, at `rate` records/s."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from kafkasql_magic.local import produce

    session.sql("SET 'auto.offset.reset'='latest';")
    query = session.sql("CREATE STREAM lat_sink WITH (VALUE_FORMAT='AVRO') AS SELECT * FROM lat_src;")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-lat-{os.getpid()}",
                         "enable.auto.commit": False})
    # the sink topic is new and empty: read it from its start, assigned at once (a subscribed
    # consumer set to "latest" joins its group late and skips what was written meanwhile)
    partitions = consumer.list_topics(query.sink_topic, timeout=10).topics[query.sink_topic].partitions
    consumer.assign([TopicPartition(query.sink_topic, p, OFFSET_BEGINNING) for p in partitions])
    time.sleep(5)  # the query is running before the first record is sent
    total = rate * seconds
    delays: list[float] = []

    def send():
        records = make_records(total)
        start = time.time()
        for i in range(seconds * 10):  # ten slices a second
            due = start + i / 10
            time.sleep(max(0.0, due - time.time()))
            now = int(time.time() * 1000)
            chunk = [dict(next(records), timestamp=now) for _ in range(rate // 10)]
            produce(bootstrap, source_topic, chunk, flush=False)

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.time() + seconds + 60
    while len(delays) < total and time.time() < deadline:
        for msg in consumer.consume(10000, 0.5):
            if msg.error() is None:
                delays.append(time.time() * 1000 - msg.timestamp()[1])
    sender.join()
    consumer.close()
    query.terminate()
    delays.sort()
    pick = lambda q: round(delays[min(len(delays) - 1, int(q * len(delays)))], 1) if delays else None  # noqa: E731
    return {"rate": rate, "seconds": seconds, "received": len(delays), "p50_ms": pick(0.50), "p99_ms": pick(0.99)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--compare-three-jobs", action="store_true",
                    help="also run the CSAS with the earlier three-jobs-per-batch handling")
    ap.add_argument("--compare-udf-encode", action="store_true",
                    help="also run the CSAS with the value encoded by an Arrow UDF, not by the writer")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sink.json"))
    args = ap.parse_args(argv)

    import kafkasql_magic as ks
    from kafkasql_magic.local import LocalStack, produce

    n, parts = args.records, args.partitions
    load_before = os.getloadavg()[0]  # a shared machine's load explains slow figures
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        topic = f"bench-sink-{os.getpid()}"
        produce(bootstrap, topic, make_records(n), create_partitions=parts)
        produce(bootstrap, topic + "-warmup", make_records(1000), create_partitions=parts)
        produce(bootstrap, topic + "-lat", [], create_partitions=parts)
        raw = raw_consume(bootstrap, topic, parts, n)
        spark = spark_session(os.cpu_count() or 1)
        session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=600,
                             schema_registry_url=stack.endpoints["schema.registry.url"])
        session.sql("SET 'auto.offset.reset'='earliest';")
        for name, t in (("warm_src", topic + "-warmup"), ("bench_src", topic), ("lat_src", topic + "-lat")):
            session.sql(f"CREATE STREAM {name} {COLUMNS} WITH (kafka_topic='{t}', value_format='JSON');")
        warm = session.sql("CREATE STREAM warm_sink WITH (VALUE_FORMAT='AVRO') AS SELECT * FROM warm_src;")
        wait_written(warm, 1000, 300)
        warm.terminate()
        before = None
        if args.compare_three_jobs:
            from kafkasql_magic.sinks.runner import PersistentQuery

            one_job, PersistentQuery._on_batch = PersistentQuery._on_batch, three_jobs_on_batch
            try:
                before = csas_rows_per_s(session, "bench_sink_three_jobs", "bench_src", n)
            finally:
                PersistentQuery._on_batch = one_job
        udf = None
        if args.compare_udf_encode:
            from kafkasql_magic.sinks.runner import SinkWrite

            by_writer, SinkWrite._value_by_writer = SinkWrite._value_by_writer, lambda self: None
            try:
                udf = csas_rows_per_s(session, "bench_sink_udf_encode", "bench_src", n)
            finally:
                SinkWrite._value_by_writer = by_writer
        csas = csas_rows_per_s(session, "bench_sink", "bench_src", n)
        lat = latency(bootstrap, session, topic + "-lat", args.rate, args.seconds)
        session.stop()
    results = {"records": n, "partitions": parts, "raw_consume_rows_per_s": round(raw),
               "csas_json_to_avro_rows_per_s": round(csas), "csas_vs_raw": round(csas / raw, 3),
               **({} if before is None else {"csas_three_jobs_rows_per_s": round(before),
                                             "csas_three_jobs_vs_raw": round(before / raw, 3)}),
               **({} if udf is None else {"csas_udf_encode_rows_per_s": round(udf),
                                          "csas_udf_encode_vs_raw": round(udf / raw, 3)}),
               "latency": lat, "machine": {"cores": os.cpu_count(), "load_average_1m": [load_before, os.getloadavg()[0]],
                                           **machine_facts()},
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(results, indent=1))
    write_report(args.out, results, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
