"""Driver memory under a table aggregation of N distinct keys: the state lives in Spark's state
store (RocksDB), not in the driver.

    python bench/driver_memory.py [--keys 1000000] [--per-trigger 100000]
                                  [--out bench/results/driver-memory.json]

On the embedded broker, N JSON records with N distinct keys (4 partitions) feed a persistent
`CREATE TABLE t AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM s GROUP BY k` on local[2]
Spark, run until it has read every record. Sampled every 0.5 s from just before the statement:
the driver's Python process RSS (where a per-key dict of ours would grow), Spark's JVM heap in
use (in local mode the JVM is driver and executor at once) and the JVM process's RSS (RocksDB's
native memory is in it), and at the end the size of the query's checkpoint on disk (the state
store's files). The goal (issue #30): the driver's memory within 150 MB of its start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

MB = 1 << 20


def records(n: int):
    for i in range(n):
        yield {"key": f"k{i}".encode(), "value": json.dumps({"v": i % 97}).encode()}


class Sampler:
    """Peak and last readings of the driver's RSS, the JVM's heap in use and the JVM's RSS."""

    def __init__(self, spark, interval: float = 0.5):
        import psutil

        self.me = psutil.Process()
        self.jvm = next(p for p in self.me.children(recursive=True) if "java" in p.name())
        self.runtime = spark._jvm.java.lang.Runtime.getRuntime()
        self.start = self.read()
        self.peak = dict(self.start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def read(self) -> dict:
        heap = self.runtime.totalMemory() - self.runtime.freeMemory()
        return {"driver_python_rss_mb": round(self.me.memory_info().rss / MB, 1),
                "jvm_heap_used_mb": round(heap / MB, 1), "jvm_rss_mb": round(self.jvm.memory_info().rss / MB, 1)}

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for name, value in self.read().items():
                self.peak[name] = max(self.peak[name], value)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.read()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--per-trigger", type=int, default=100_000)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "driver-memory.json"))
    args = ap.parse_args(argv)

    from ingest import machine_facts, write_report

    from kafkasql_magic.local import LocalStack, produce
    from kafkasql_magic.session import Session
    from kafkasql_magic.sparkenv import local_spark

    report: dict = {"keys": args.keys, "records_per_micro_batch": args.per_trigger, **machine_facts(),
                    "load_average_start": list(os.getloadavg())}
    with LocalStack() as stack, tempfile.TemporaryDirectory() as state:
        produce(stack.bootstrap_servers, "distinct", records(args.keys), create_partitions=4)
        session = Session(stack.bootstrap_servers, spark=local_spark(), timeout=600, state_dir=state,
                          max_records_per_trigger=args.per_trigger)
        session.sql("SET 'auto.offset.reset'='earliest';")
        session.sql("CREATE STREAM s (k STRING KEY, v INT) WITH (kafka_topic='distinct', value_format='JSON');")
        sampler, t0 = Sampler(session.spark), time.perf_counter()
        query = session.sql("CREATE TABLE t AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM s GROUP BY k;")
        try:
            while query.status().records_in < args.keys:
                if query.failure is not None:
                    raise RuntimeError(query.failure)
                if time.perf_counter() - t0 > args.timeout:
                    raise TimeoutError(f"{query.status().records_in:,} of {args.keys:,} records read")
                time.sleep(1)
            wall = time.perf_counter() - t0
            end = sampler.stop()
            checkpoint = sum(f.stat().st_size for f in Path(state).rglob("*") if f.is_file())
        finally:
            session.stop()
    report.update(seconds=round(wall, 1), start=sampler.start, peak=sampler.peak, end=end,
                  driver_python_growth_mb=round(sampler.peak["driver_python_rss_mb"]
                                                - sampler.start["driver_python_rss_mb"], 1),
                  checkpoint_mb=round(checkpoint / MB, 1), load_average_end=list(os.getloadavg()))
    print(json.dumps(report, indent=2))
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
