"""Pull-query benchmark: a key lookup against a full-table read of the same table.

    python bench/pull.py [--records N] [--partitions 8] [--repeat 3] [--out bench/results/pull.json]

A table over N changelog records (N/2 keys, each written twice) in `--partitions` partitions,
produced with Kafka's default partitioner, on the embedded broker:
  key_lookup   SELECT * FROM t WHERE id = k: reads only the key's partition
  full_read    SELECT * FROM t WHERE CAST(id AS STRING) = 'k': the same row, but the WHERE
               clause names no key constant, so every partition is read
Seconds per query (median of the rounds, Spark and Python worker start-up excluded by a
warm-up query), the records each read (the source's input) and the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import machine_facts, spark_session  # noqa: E402


def records(n: int):
    keys = max(1, n // 2)
    for i in range(n):
        key = i % keys
        yield {"key": struct.pack(">i", key), "value": json.dumps({"V": f"v{i}", "PAD": "x" * 60}).encode()}


def timed(session, text: str, rounds: int) -> tuple[float, object]:
    times, rows = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        rows = session.sql(text)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "pull.json"))
    args = ap.parse_args(argv)

    import kafkasql_magic as ks
    from kafkasql_magic.kafka.partitioner import default_partition
    from kafkasql_magic.local import LocalStack, produce
    from kafkasql_magic.sql import parse_statement
    from kafkasql_magic.engine.api import prepare

    cores = os.cpu_count() or 1
    load_before = os.getloadavg()[0]  # a shared machine: the figures mean little without it
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        topic = f"bench-pull-{os.getpid()}"
        produce(bootstrap, topic, records(args.records), create_partitions=args.partitions)
        spark = spark_session(cores)
        session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=600)
        session.sql(f"CREATE TABLE bench_t (id INT PRIMARY KEY, v STRING, pad STRING) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON');")
        key = 42
        lookup = f"SELECT * FROM bench_t WHERE id = {key};"
        full = f"SELECT * FROM bench_t WHERE CAST(id AS STRING) = '{key}';"
        session.sql(lookup)  # warm-up: Python workers started, the reader imported
        results = {}
        for name, text in (("key_lookup", lookup), ("full_read", full)):
            seconds, rows = timed(session, text, args.repeat)
            assert rows.to_dict("records")[0]["ID"] == key, rows
            read = prepare(session, parse_statement(text)).read
            results[name] = {"query": text, "seconds": round(seconds, 3),
                             "records_read": session.raw_frame(read).count(), "partitions_read": read.partitions}
        session.stop()
        spark.stop()
    part = default_partition(struct.pack(">i", key), args.partitions)
    out = {"machine": machine_facts(), "cores": cores, "records": args.records, "keys": max(1, args.records // 2),
           "partitions": args.partitions, "rounds": args.repeat,
           "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}, "key_partition": part, "cases": results,
           "speedup_lookup_vs_full": round(results["full_read"]["seconds"] / results["key_lookup"]["seconds"], 2)}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}, indent=2))
    return out


if __name__ == "__main__":
    main()
