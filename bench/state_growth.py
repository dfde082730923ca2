"""State growth: CPU per record of stateful queries at N and 10 x N records, in one run.

    python bench/state_growth.py [--records 20000] [--old-code /tmp/tjoin-old]
                                 [--out bench/results/state-growth.json]

A stateful operator whose cost follows the changes costs the same per record whatever the
state holds; one that reads and rewrites its state's history every micro-batch costs more per
record the longer it runs. Each case runs at N and at 10 x N records, micro-batches of N/4
records per source (`max_records_per_trigger`, the same at both sizes: ten times the records is
ten times the micro-batches, each meeting a larger state), and reports CPU seconds per million
records of each size, and of its tail: the records read in its last micro-batches (the last N/2
of the records at either size, so the same micro-batches' fixed costs, once the state holds N or
10 x N records' worth); the ratio is the tail's at 10 x N over N (the goal: within 1.25 x). A
run's whole CPU per record also counts the query's start (Spark planning its first micro-batch,
its Python workers), which a small N does not amortise.

  table_aggregation  SELECT k2, COUNT(*) FROM a GROUP BY k2 EMIT CHANGES (a table's rows as state:
                     engine/build/retract.py)
  pk_join            table a JOIN table b ON a.k = b.k (engine/table_join/)
  fk_join            table a JOIN table tags ON a.k2 = tags.tag (a foreign key; 100 tag rows)
  fk_chain           fk_join, then LEFT JOIN table b ON a.k = b.k (a chain after a foreign-key join)
  stream_table_join  stream s JOIN table b ON s.k = b.k (engine/lookup_join/)
  mz_diff_join       SUBSCRIBE (SELECT ... FROM s x LEFT JOIN s y ON x.id = y.id) (engine/build/diff_join.py)

Each case and size runs in its own process (a fresh Spark, local[2]) against one embedded
broker; its CPU is the whole process tree's (driver, JVM, Python workers: bench/proctree.py)
from the query's start to the micro-batch that read its last record (the session's start
excluded). `--old-code DIR`: the table joins run a second time with DIR (a checkout of another
revision) first on PYTHONPATH, so the old and new code are measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAGS = 100
CASES = {
    "table_aggregation": ("SELECT k2, COUNT(*) AS n FROM a GROUP BY k2 EMIT CHANGES;", "ksql", lambda n: n),
    "pk_join": ("SELECT a.k, a.amount, b.k2 FROM a JOIN b ON a.k = b.k EMIT CHANGES;", "ksql", lambda n: 2 * n),
    "fk_join": ("SELECT a.k, a.amount, t.label FROM a JOIN tags t ON a.k2 = t.tag EMIT CHANGES;", "ksql",
                lambda n: n + TAGS),
    "fk_chain": ("SELECT a.k, a.amount, t.label, b.k2 FROM a JOIN tags t ON a.k2 = t.tag LEFT JOIN b ON a.k = b.k "
                 "EMIT CHANGES;", "ksql", lambda n: 2 * n + TAGS),
    "stream_table_join": ("SELECT s.k, s.amount, b.k2 FROM s JOIN b ON s.k = b.k WHERE s.amount < 0 EMIT CHANGES;",
                          "ksql", lambda n: 2 * n),
    "mz_diff_join": ("SUBSCRIBE (SELECT x.id, y.amount FROM s x LEFT JOIN s y ON x.id = y.id WHERE x.amount < 0)",
                     "materialize", lambda n: 2 * n),
}
#: The cases run again on the old code (`--old-code`).
COMPARED = ("pk_join", "fk_join", "fk_chain")


def rows(n: int, salt: int):
    for i in range(n):
        value = {"id": i, "amount": 1.0 + (i * salt) % 97, "k2": f"g{i % TAGS}"}
        yield {"key": str(i).encode(), "value": json.dumps(value).encode()}


def declarations(prefix: str) -> str:
    columns = "id BIGINT, amount DOUBLE, k2 STRING"
    return (f"SET 'auto.offset.reset'='earliest';"
            f"CREATE TABLE a (k STRING PRIMARY KEY, {columns}) WITH (kafka_topic='{prefix}-a', value_format='JSON');"
            f"CREATE TABLE b (k STRING PRIMARY KEY, {columns}) WITH (kafka_topic='{prefix}-b', value_format='JSON');"
            f"CREATE STREAM s (k STRING KEY, {columns}) WITH (kafka_topic='{prefix}-a', value_format='JSON');"
            f"CREATE TABLE tags (tag STRING PRIMARY KEY, label STRING) "
            f"WITH (kafka_topic='{prefix}-tags', value_format='JSON');")


def worker(args) -> int:
    """One case at one size, in this process: prints its CPU seconds and wall time as JSON."""
    from proctree import TreeSampler

    from kafkasql_magic.session import Session
    from kafkasql_magic.sparkenv import local_spark

    text, dialect, reads = CASES[args.case]
    session = Session(args.bootstrap, spark=local_spark(), timeout=600,
                      max_records_per_trigger=args.per_trigger)
    session.sql(declarations(args.prefix))
    total = reads(args.records)
    sampler, t0 = TreeSampler(), time.perf_counter()
    handle = session.sql(text, dialect=dialect)
    mark = None  # (records read, CPU seconds) when the tail began
    try:
        while handle.records_read < total:
            if handle.failure is not None:
                raise handle.failure
            if time.perf_counter() - t0 > args.timeout:
                raise TimeoutError(f"{handle.records_read:,} of {total:,} records read after {args.timeout} s")
            if mark is None and handle.records_read >= total - args.tail:
                mark = (handle.records_read, sampler.cpu())
            time.sleep(0.2)
        wall, cpu = time.perf_counter() - t0, sampler.stop()
    finally:
        handle.stop()
    print(json.dumps({"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "records": total,
                      "tail_records": total - mark[0], "tail_cpu_s": round(cpu - mark[1], 2)}))
    return 0


def run_case(case: str, n: int, prefix: str, code: Path, args, bootstrap: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT / "bench")])}
    out = subprocess.run([sys.executable, __file__, "--worker", case, "--records", str(n), "--prefix", prefix,
                          "--bootstrap", bootstrap, "--per-trigger", str(args.records // 4),
                          "--tail", str(CASES[case][2](args.records) // 2),
                          "--timeout", str(args.timeout)],
                         env=env, capture_output=True, text=True, timeout=args.timeout + 600)
    if out.returncode != 0:
        raise RuntimeError(f"{case} at {n:,} records failed:\n{out.stderr[-4000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu_s_per_million"] = round(result["cpu_s"] / result["records"] * 1e6, 1)
    result["tail_cpu_s_per_million"] = round(result["tail_cpu_s"] / max(result["tail_records"], 1) * 1e6, 1)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000, help="N: each case runs at N and 10 x N")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--old-code", default="", help="a checkout of the old revision: the table joins run on it too")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "state-growth.json"))
    ap.add_argument("--worker", default="")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--bootstrap", default="")
    ap.add_argument("--per-trigger", type=int, default=5000)
    ap.add_argument("--tail", type=int, default=0)
    args = ap.parse_args(argv)
    if args.worker:
        args.case = args.worker
        return worker(args)

    sys.path.insert(0, str(ROOT))
    from kafkasql_magic.local import LocalStack, produce

    sizes = [args.records, 10 * args.records]
    report: dict = {"sizes": sizes, "records_per_micro_batch": args.records // 4, "cpu_count": os.cpu_count(),
                    "load_average_start": list(os.getloadavg()), "cases": {}}
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        for n in sizes:
            prefix = f"growth-{n}-{os.getpid()}"
            produce(bootstrap, f"{prefix}-a", rows(n, 7), create_partitions=2)
            produce(bootstrap, f"{prefix}-b", rows(n, 11), create_partitions=2)
            produce(bootstrap, f"{prefix}-tags", ({"key": f"g{i}".encode(), "value": json.dumps(
                {"label": f"tag {i}"}).encode()} for i in range(TAGS)), create_partitions=1)
        versions = [("new", ROOT)] + ([("old", Path(args.old_code))] if args.old_code else [])
        for case in args.cases.split(","):
            for version, code in versions:
                if version == "old" and case not in COMPARED:
                    continue
                name = case if version == "new" else f"{case} (old)"
                found = {}
                for n in sizes:
                    found[str(n)] = run_case(case, n, f"growth-{n}-{os.getpid()}", code, args, bootstrap)
                    print(f"{name} at {n:,}: {found[str(n)]}", flush=True)
                small, large = (found[str(n)]["tail_cpu_s_per_million"] for n in sizes)
                found["ratio"] = round(large / small, 2)
                report["cases"][name] = found
                print(f"{name}: CPU per record at {sizes[1]:,} = {found['ratio']} x at {sizes[0]:,}", flush=True)
                report["load_average_end"] = list(os.getloadavg())
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(report, indent=2) + "\n")  # after each case: a long run may stop
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
