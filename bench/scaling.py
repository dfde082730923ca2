"""Scaling model: CPU-seconds per million records for each ingest stage, and a check of the
model on `local-cluster[2,1,1024]` (two executor JVMs) against `local[2]`.

    python bench/scaling.py [--records N] [--partitions 4] [--repeat 3] [--out bench/results/scaling.json]

Wall-clock rates on a shared machine say little about a cluster; CPU time per record does:
a cluster of N executor cores reaches about N / (CPU-seconds per record) until something
that does not grow with N (Kafka partitions, the broker) runs out. Stages, each the CPU of
every process involved (the consumer's librdkafka threads, Spark's JVMs and Python
workers, the broker), per million records, median of the rounds:

  fetch        one consumer's loop with the reader's librdkafka settings (process CPU, its threads too)
  broker       the embedded broker serving the source's `count()` (no headers)
  arrow_build  the reader's Arrow batches from consumed messages, without headers
  headers      the headers column, worker and JVM (source `count()` with headers minus without)
  jvm_intake   the source's `count()` without headers (Spark's processes) minus fetch and arrow_build
  decode       Spark's plain `from_json` over cached values minus counting the cache
  projection   the planner's SELECT of five JSON value columns (case-insensitive matching,
               checks, bookkeeping columns) minus the source's count and decode

Each master runs in its own Python process (`--spark MASTER`), so the sessions never mix.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PLANNER_COLUMNS = ("ID", "NAME", "AMOUNT", "TS", "TAGS")


def tree_cpu(root: int) -> float:
    """CPU-seconds used so far by process `root` and all its descendants (reaped ones too)."""
    parents, used = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(x) for x in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def cpu_of(pids, run) -> tuple[float, float]:
    """(CPU-seconds of the process trees `pids` plus this process, wall seconds) while `run()` runs."""
    before = sum(map(tree_cpu, pids)) + time.process_time()
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    return sum(map(tree_cpu, pids)) + time.process_time() - before, wall


def spark_worker(master: str, bootstrap: str, topic: str, n: int, repeat: int, broker_pid: int) -> dict:
    """Runs in its own process: CPU and rates of the Spark cases under `master`."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import kafkasql_magic as ks
    from kafkasql_magic.kafka.source import register

    spark = (SparkSession.builder.master(master).appName("kafkasql-bench-scaling")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .config("spark.executor.memory", "768m").config("spark.driver.memory", "1g")
             .config("spark.executorEnv.PYTHONPATH", str(ROOT))
             .config("spark.python.authenticate.socketTimeout", "120s").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    jvm = spark.sparkContext._gateway.proc.pid

    def source(**extra):
        return spark.read.format("kafkasql").options(**{"bootstrap.servers": bootstrap, "topic": topic,
                                                         **extra}).load()

    session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=600)
    session.sql(f"CREATE STREAM bench (id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    schema = "id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING"

    def counted(frame):
        assert frame.count() == n

    def from_json(frame):
        row = frame.select(F.from_json(F.col("value").cast("string"), schema).alias("v")).agg(
            F.count("v.id").alias("c"), F.max(F.length("v.name")), F.sum("v.amount"), F.max("v.ts"),
            F.max(F.length("v.tags"))).collect()[0]
        assert row["c"] == n

    def planner():
        frame = session.dataframe(f"SELECT {', '.join(PLANNER_COLUMNS)} FROM bench;")
        row = frame.agg(F.count("ID").alias("c"), *[F.max(F.length(F.col(c).cast("string")))
                                                    for c in PLANNER_COLUMNS[1:]]).collect()[0]
        assert row["c"] == n

    counted(source(includeHeaders="false"))  # warm-up: Python workers started, reader imported
    cached = source(includeHeaders="false").select("value").cache()
    counted(cached)
    cases = {
        "count_no_headers": lambda: counted(source(includeHeaders="false")),
        "count_headers": lambda: counted(source()),
        "cached_count": lambda: counted(cached),
        "cached_from_json": lambda: from_json(cached),
        "planner_json": planner,
    }
    cpu, wall, broker = {k: [] for k in cases}, {k: [] for k in cases}, []
    for _ in range(repeat):
        for name, run in cases.items():
            b0 = tree_cpu(broker_pid)
            c, w = cpu_of([jvm], run)
            cpu[name].append(c)
            wall[name].append(w)
            if name == "count_no_headers":
                broker.append(tree_cpu(broker_pid) - b0)
    cached.unpersist()
    spark.stop()
    return {"cpu_s": {k: statistics.median(v) for k, v in cpu.items()},
            "rows_per_s": {k: n / statistics.median(v) for k, v in wall.items()},
            "broker_cpu_s": statistics.median(broker)}


def consume_all(bootstrap: str, topic: str, partitions: int, n: int):
    """(messages by partition, CPU-seconds, wall seconds) of one consumer with the reader's
    settings reading the whole topic (process CPU: librdkafka's threads count too)."""
    import gc

    from confluent_kafka import Consumer, TopicPartition

    from kafkasql_magic.kafka.arrow_batch import CONSUMER_DEFAULTS

    consumer = Consumer({**CONSUMER_DEFAULTS, "bootstrap.servers": bootstrap})
    by_partition: dict[int, list] = {}
    got = 0
    gc.disable()
    cpu0, t0 = time.process_time(), time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    while got < n:
        for m in consumer.consume(10000, 1.0):
            if m.error() is None:
                by_partition.setdefault(m.partition(), []).append(m)
                got += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    gc.enable()
    consumer.close()
    return by_partition, cpu, wall


def fetch_cpu(bootstrap: str, topic: str, partitions: int, n: int, repeat: int):
    """(CPU-seconds, rows/s, the last round's messages) of the single consumer, median of rounds."""
    cpu, rates, messages = [], [], None
    for _ in range(repeat):
        messages = None
        messages, c, wall = consume_all(bootstrap, topic, partitions, n)
        cpu.append(c)
        rates.append(n / wall)
    return statistics.median(cpu), statistics.median(rates), messages


def arrow_build_cpu(by_partition, repeat: int) -> float:
    """CPU-seconds to build the reader's Arrow batches (20,000 rows, no headers) from messages."""
    import gc

    from kafkasql_magic.kafka.arrow_batch import BATCH_ROWS, arrow_schema, to_record_batch

    schema = arrow_schema()
    batches = [(p, msgs[i:i + BATCH_ROWS]) for p, msgs in by_partition.items()
               for i in range(0, len(msgs), BATCH_ROWS)]
    rounds = []
    gc.disable()
    for _ in range(repeat):
        t0 = time.process_time()
        for p, batch in batches:
            to_record_batch(batch, "t", p, schema, include_headers=False)
        rounds.append(time.process_time() - t0)
    gc.enable()
    return statistics.median(rounds)


def per_million(seconds: float, n: int) -> float:
    return round(seconds * 1_000_000 / n, 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scaling.json"))
    ap.add_argument("--spark", nargs=6, metavar=("MASTER", "BOOTSTRAP", "TOPIC", "N", "REPEAT", "BROKER_PID"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.spark:
        master, bootstrap, topic, n, repeat, broker_pid = args.spark
        print("RESULT " + json.dumps(spark_worker(master, bootstrap, topic, int(n), int(repeat), int(broker_pid))))
        return 0

    from ingest import machine_facts, make_records, write_report

    from kafkasql_magic.local import LocalStack, produce

    n, parts = args.records, args.partitions
    with LocalStack() as stack:
        bootstrap, topic = stack.bootstrap_servers, f"bench-scaling-{os.getpid()}"
        produce(bootstrap, topic, make_records(n), create_partitions=parts)
        fetch, consumer_rate, messages = fetch_cpu(bootstrap, topic, parts, n, args.repeat)
        build = arrow_build_cpu(messages, args.repeat)
        del messages
        masters = {}
        for master in ("local[2]", "local-cluster[2,1,1024]"):
            out = subprocess.run([sys.executable, __file__, "--spark", master, bootstrap, topic, str(n),
                                  str(args.repeat), str(stack.broker.pid)],
                                 env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
            lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
            if out.returncode != 0 or not lines:
                raise SystemExit(f"{master} failed:\n{out.stderr[-3000:]}")
            masters[master] = json.loads(lines[-1][len("RESULT "):])

    local = masters["local[2]"]["cpu_s"]
    stages = {
        "fetch": per_million(fetch, n),
        "broker": per_million(masters["local[2]"]["broker_cpu_s"], n),
        "arrow_build": per_million(build, n),
        "headers": per_million(local["count_headers"] - local["count_no_headers"], n),
        "jvm_intake": per_million(local["count_no_headers"] - fetch - build, n),
        "decode": per_million(local["cached_from_json"] - local["cached_count"], n),
        "projection": per_million(local["planner_json"] - local["count_no_headers"]
                                  - (local["cached_from_json"] - local["cached_count"]), n),
    }
    spark_stages = ("fetch", "arrow_build", "jvm_intake", "decode", "projection")
    per_record = {
        "source_count": sum(stages[s] for s in spark_stages[:3]),
        "planner_json": sum(stages[s] for s in spark_stages),
    }
    cores = os.cpu_count() or 1
    model = {case: {f"{k}_executor_cores": round(k * 1_000_000 / cpu) for k in (1, 2, 4, 8, 16)}
             for case, cpu in per_record.items()}
    results = {
        "cores": cores, "records": n, "partitions": parts, "rounds": args.repeat,
        "cpu_s_per_million_records": stages,
        "cpu_s_per_million_records_per_query": {k: round(v, 2) for k, v in per_record.items()},
        "model_rows_per_s": model,
        "single_consumer_rows_per_s": round(consumer_rate),
        "measured_rows_per_s": {m: {k: round(v) for k, v in r["rows_per_s"].items()} for m, r in masters.items()},
        "measured_cpu_s_per_million_records": {m: {k: per_million(v, n) for k, v in r["cpu_s"].items()}
                                               for m, r in masters.items()},
        "load_average_1min": round(os.getloadavg()[0], 2),
        "machine": machine_facts(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(results, indent=2))
    write_report(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
