"""Where a filter-and-project CREATE STREAM ... AS SELECT spends its CPU, and its first output.

    python bench/csas_profile.py [--records 200000] [--variants csas,noop_sink,source_only,csas@50000]
                                 [--out bench/results/csas-profile.json]

On the embedded broker, over bench/peers.py's `orders` (N JSON records, 4 partitions), in one
process with a warm local[2] Spark session (a warm-up CSAS runs first), each variant runs the
job of bench/peers.py (a): `CREATE STREAM out AS SELECT customer, orderid, qty * price AS total
FROM orders WHERE qty > 1` to a JSON topic:
  csas         the statement as a user runs it
  noop_sink    the same query and micro-batches, rows handed to Spark's `noop` sink instead of
               the Kafka writer (so csas - noop_sink is the encode-and-produce cost)
  source_only  the raw source alone: `count()` of the topic read by the `kafkasql` data source
  csas@N       csas with at most N records per micro-batch (the session's persistent_records_per_trigger)
  tumbling     peers job (b) instead: a 10 s TUMBLING COUNT/SUM per customer, run until it has
               read every record (its output count depends on the micro-batches)
Per variant: seconds from the statement to the first record in the sink topic (csas), to the
last record written; CPU seconds per million input records of the driver's Python, the JVM by
thread group (task threads, the stream's own thread, JIT compiler, GC, other) from
/proc/<pid>/task, the Python workers, and the broker; and the confluent-kafka loop of
bench/peer_jobs.py on the same records as the yardstick (ratios to it compare across runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from ingest import machine_facts, spark_session, write_report  # noqa: E402
from peers import order  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")
STREAM = ("CREATE STREAM {name} (customer STRING KEY, orderid STRING, item STRING, qty INT, price DOUBLE, "
          "ts BIGINT) WITH (kafka_topic='{topic}', value_format='JSON');")
CSAS = ("CREATE STREAM {name} WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON') AS "
        "SELECT customer, orderid, qty * price AS total FROM {source} WHERE qty > 1;")
#: peers job (b): the `tumbling` variant, run until every input record is read
TUMBLING = ("CREATE TABLE {name} WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON') AS SELECT customer, "
            "AS_VALUE(customer) AS cust, WINDOWSTART AS ws, COUNT(*) AS n, SUM(qty) AS q FROM {source} "
            "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY customer EMIT CHANGES;")


def _thread_group(name: str) -> str:
    if name.startswith("Executor task") or name.startswith("Executor task launch"):
        return "jvm_tasks"
    if name.startswith("stream execut"):
        return "jvm_stream_thread"
    if "Compiler" in name or name.startswith("C1 ") or name.startswith("C2 "):
        return "jvm_jit"
    if "GC" in name or name.startswith("G1 ") or "Gang" in name:
        return "jvm_gc"
    return "jvm_other"


def _ticks(path: str) -> float:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


class Cpu:
    """CPU seconds by part: every process and JVM thread ever seen keeps its latest sample."""

    def __init__(self, broker_pid: int | None):
        self.broker_pid, self.seen, self.own = broker_pid, {}, 0.0
        self._stop = threading.Event()
        self.base = self.sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()
        self.own = time.thread_time()  # the sampling's own CPU, taken off the driver's

    def sample(self) -> dict:
        import psutil

        me = psutil.Process()
        for proc in [me] + me.children(recursive=True):
            try:
                name, cmd = proc.name(), " ".join(proc.cmdline())
                if proc.pid == me.pid:
                    self.seen[(proc.pid, "driver")] = ("driver_python", sum(proc.cpu_times()[:2]))
                elif proc.pid == self.broker_pid:
                    self.seen[(proc.pid, "broker")] = ("broker", sum(proc.cpu_times()[:2]))
                elif name == "java":
                    for tid in os.listdir(f"/proc/{proc.pid}/task"):
                        try:
                            comm = Path(f"/proc/{proc.pid}/task/{tid}/comm").read_text().strip()
                            self.seen[(proc.pid, tid)] = (_thread_group(comm),
                                                          _ticks(f"/proc/{proc.pid}/task/{tid}/stat"))
                        except OSError:
                            continue
                elif "python" in name or "pyspark" in cmd:
                    self.seen[(proc.pid, proc.create_time())] = ("python_workers", sum(proc.cpu_times()[:2]))
            except (psutil.Error, OSError):
                continue
        return dict(self.seen)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        now = self.sample()
        parts: dict[str, float] = {}
        for key, (part, cpu) in now.items():
            parts[part] = parts.get(part, 0.0) + cpu - self.base.get(key, (part, 0.0))[1]
        parts["driver_python"] -= self.own
        return parts


def loop_cpu(bootstrap: str, topic: str, out: str, n: int) -> dict:
    """bench/peer_jobs.py's confluent-kafka loop for job (a) over `topic`, until it has read all."""
    code = f"""
import json, sys, time, resource
from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
c = Consumer({{"bootstrap.servers": {bootstrap!r}, "group.id": "loop-{out}", "enable.auto.commit": False}})
p = Producer({{"bootstrap.servers": {bootstrap!r}, "linger.ms": 20}})
c.assign([TopicPartition({topic!r}, i, OFFSET_BEGINNING) for i in range(4)])
t0, seen = time.perf_counter(), 0
while seen < {n}:
    for msg in c.consume(10000, 0.5):
        if msg.error() is not None:
            continue
        seen += 1
        o = json.loads(msg.value())
        if o["qty"] > 1:
            p.produce({out!r}, json.dumps({{"orderid": o["orderid"], "total": o["qty"] * o["price"]}}).encode(), msg.key())
    p.poll(0)
p.flush(60)
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"seconds": time.perf_counter() - t0, "cpu": r.ru_utime + r.ru_stime}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    res = json.loads(done.stdout.strip().splitlines()[-1])
    return {"rec_per_s": round(n / res["seconds"]), "cpu_s_per_million": round(res["cpu"] / n * 1e6, 2)}


def first_record(bootstrap: str, topic: str, since: float, found: dict) -> threading.Thread:
    """A thread noting when the first record of `topic` can be read (perf_counter - since)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    def run():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-{topic}", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(4)])
        try:
            while "s" not in found and not found.get("stop"):
                msg = consumer.poll(0.05)
                if msg is not None and msg.error() is None:
                    found["s"] = round(time.perf_counter() - since, 2)
        finally:
            consumer.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def top(profile, count: int = 25) -> list[str]:
    """The functions of a cProfile with the most cumulative time, as lines."""
    import io
    import pstats

    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(count)
    return [line for line in text.getvalue().splitlines() if line.strip()][-count:]


def profiled_batches(profile):
    """Run every micro-batch's `_on_batch` under `profile` (the driver's Python per batch)."""
    from kafkasql_magic.sinks.runner import PersistentQuery

    on_batch = PersistentQuery._on_batch

    def wrapped(self, batch, batch_id):
        profile.enable()
        try:
            return on_batch(self, batch, batch_id)
        finally:
            profile.disable()

    PersistentQuery._on_batch = wrapped
    return lambda: setattr(PersistentQuery, "_on_batch", on_batch)


def run_variant(variant: str, number: int, session, spark, stack, source: str, topic: str, n: int, written: int,
                driver_profile: bool = False) -> dict:
    import cProfile
    from kafkasql_magic.local import create_topic

    variant, _, per_trigger = variant.partition("@")  # csas@50000: at most 50,000 records per micro-batch
    kept = session.persistent_records_per_trigger
    if per_trigger:
        session.persistent_records_per_trigger = int(per_trigger)
    out = f"csas-{variant}-{number}-{os.getpid()}"
    create_topic(stack.bootstrap_servers, out, 4)
    cpu = Cpu(next((c.proc.pid for c in stack.components if getattr(c, "proc", None) is not None), None))
    started = time.perf_counter()
    result: dict = {"variant": variant, "records_per_trigger": session.persistent_records_per_trigger}
    if variant == "source_only":
        rows = (spark.read.format("kafkasql").option("bootstrap.servers", stack.bootstrap_servers)
                .option("subscribe", topic).load().count())
        assert rows == n, rows
    else:
        found: dict = {}
        watcher = first_record(stack.bootstrap_servers, out, started, found) if variant in ("csas", "tumbling") else None
        original = None
        if variant == "noop_sink":
            from pyspark.sql import DataFrameWriter

            original = DataFrameWriter.format
            DataFrameWriter.format = lambda self, f: original(self, "noop" if f == "kafkasql_sink" else f)
        statement, batches = cProfile.Profile(), cProfile.Profile()
        restore = profiled_batches(batches) if driver_profile else (lambda: None)
        try:
            if driver_profile:
                statement.enable()
            text = TUMBLING if variant == "tumbling" else CSAS
            query = session.sql(text.format(name=f"out_{variant}_{number}", topic=out, source=source))
            statement.disable()
            result["seconds_statement"] = round(time.perf_counter() - started, 2)
            result["statement_returned_at"] = time.time()
            if variant == "tumbling":  # its output count depends on the micro-batches: wait for its input
                deadline = time.monotonic() + 3600
                while query.status().records_in < n and query.failure is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                if query.status().records_in < n:
                    raise RuntimeError(f"{variant}: {query.status().records_in} of {n} read; {query.failure}")
            elif not query.wait_for_records(written, 3600):
                raise RuntimeError(f"{variant}: {query.records_out} of {written} written; {query.failure}")
        finally:
            restore()
            if original is not None:
                from pyspark.sql import DataFrameWriter

                DataFrameWriter.format = original
        result["seconds_to_last_written"] = round(time.perf_counter() - started, 2)
        if watcher is not None:
            watcher.join(60)
            found["stop"] = True
            result["seconds_to_first_output"] = found.get("s")
        progress = [p for p in query._query.recentProgress if p.get("numInputRows")]
        result["batches"] = len(progress)
        if progress:  # the first micro-batch: when it began after the statement returned, and its parts
            from datetime import datetime

            begun = datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00")).timestamp()
            result["first_batch_began_s_after_statement"] = round(begun - result["statement_returned_at"], 2)
            result["first_batch_ms"] = progress[0]["durationMs"]
        result["batch_duration_ms"] = {k: sum(p["durationMs"].get(k, 0) for p in progress)
                                       for k in progress[0]["durationMs"]} if progress else {}
        query.terminate()
        session.persistent_records_per_trigger = kept
        if driver_profile:
            result["driver_statement_profile"] = top(statement)
            result["driver_batches_profile"] = top(batches)
    result.setdefault("seconds_to_last_written", round(time.perf_counter() - started, 2))
    parts = cpu.stop()
    result["cpu_s_per_million"] = {k: round(v / n * 1e6, 2) for k, v in sorted(parts.items())}
    result["cpu_s_per_million_total"] = round(sum(parts.values()) / n * 1e6, 2)
    result["rec_per_s"] = round(n / result["seconds_to_last_written"])
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--variants", default="csas,noop_sink,source_only")
    ap.add_argument("--driver-profile", action="store_true",
                    help="cProfile the statement and every micro-batch's driver work (slows both)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    ap.add_argument("--max-per-trigger", type=int, default=None,
                    help="the session's max_records_per_trigger (default: the session's)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "csas-profile.json"))
    args = ap.parse_args(argv)

    import kafkasql_magic as ks
    from kafkasql_magic.local import LocalStack, produce

    n = args.records
    dumps = lambda v: json.dumps(v, separators=(",", ":")).encode()  # noqa: E731
    load = [os.getloadavg()[0]]
    report: dict = {"records": n, "conf": args.conf, "max_per_trigger": args.max_per_trigger, "results": []}
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        topic, warm = f"orders-{os.getpid()}", f"warm-{os.getpid()}"
        for t, count in ((topic, n), (warm, 2000)):
            produce(bootstrap, t, ({"key": (o := order(i))["customer"].encode(), "timestamp": o["ts"],
                                    "value": dumps(o)} for i in range(count)), create_partitions=4)
        written = sum(1 for i in range(n) if order(i)["qty"] > 1)
        report["loop"] = loop_cpu(bootstrap, topic, f"loop-out-{os.getpid()}", n)
        print(json.dumps(report["loop"]), flush=True)
        spark = spark_session(2, dict(c.split("=", 1) for c in args.conf))
        extra = {} if args.max_per_trigger is None else {"max_records_per_trigger": args.max_per_trigger}
        session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=600, **extra)
        session.sql("SET 'auto.offset.reset'='earliest';")
        session.sql(STREAM.format(name="orders", topic=topic))
        session.sql(STREAM.format(name="warm", topic=warm))
        warm_q = session.sql(CSAS.format(name="warm_out", topic=f"warm-out-{os.getpid()}", source="warm"))
        warm_q.wait_for_records(sum(1 for i in range(2000) if order(i)["qty"] > 1), 600)
        warm_q.terminate()
        for number, variant in enumerate(args.variants.split(",")):
            res = run_variant(variant, number, session, spark, stack, "orders", topic, n, written,
                              driver_profile=args.driver_profile and variant.startswith("csas"))
            res["vs_loop_rec_per_s"] = round(res["rec_per_s"] / report["loop"]["rec_per_s"], 3)
            res["vs_loop_cpu"] = round(res["cpu_s_per_million_total"] / report["loop"]["cpu_s_per_million"], 2)
            report["results"].append(res)
            print(json.dumps(res), flush=True)
        session.stop()
    load.append(os.getloadavg()[0])
    report["machine"] = {"cores": os.cpu_count(), "load_average_1m": load, **machine_facts()}
    report["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_report(args.out, report, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
