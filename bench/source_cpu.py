"""Where the source's CPU goes: per process (and per JVM thread group), per million records.

    python bench/source_cpu.py [--records 1000000] [--partitions 4] [--repeat 3]
                               [--case name:opt=v,opt=v ...] [--out bench/results/source-cpu.json]

A bounded `spark.read.format("kafkasql")...count()` on `local[2]`, with and without headers,
measured as CPU time (`/proc/<pid>/stat` utime + stime), which holds on a shared machine where
wall-clock rates do not. Each round's CPU is split into:

  python_workers   Spark's Python workers (the reader: consume, Arrow build, Arrow IPC out)
  jvm_tasks        the JVM's task threads (Arrow intake, the row projection, the count)
  jvm_gc           the JVM's garbage collector threads
  jvm_jit          the JVM's compiler threads
  jvm_other        every other JVM thread, and threads that ended during the round
  broker           the embedded broker serving the fetches
  driver           this process (planning, py4j)
and, outside Spark, `reader_in_process`: the reader's own `read_range` over the same ranges in
this process (consume + Arrow build, no Spark), so python_workers minus it is pyspark's own
part (serializing the batches to the JVM).
Extra cases (`--case`) add source options, e.g. `--case batch50k:arrowBatchRows=50000`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
THREAD_GROUPS = (("jvm_tasks", ("Executor task",)),
                 ("jvm_gc", ("GC Thread", "G1 ", "VM Thread", "Parallel GC")),
                 ("jvm_jit", ("C1 Compiler", "C2 Compiler", "C1 CompilerThre", "C2 CompilerThre")))


def _stat(path: str):
    """(comm, fields after comm) of a /proc stat file, or None when it is gone."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def _cpu(fields, children: bool) -> float:
    return sum(int(x) for x in fields[11:15 if children else 13]) / CLOCK_TICKS


def processes() -> dict[int, tuple[int, list]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(f"/proc/{entry}/stat")
            if st:
                out[int(entry)] = (int(st[1][1]), st[1])
    return out


def tree_cpu(root: int, procs) -> float:
    """CPU of `root` and every descendant, reaped children included."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            total += _cpu(procs[pid][1], children=True)
        todo.extend(child for child, (parent, _) in procs.items() if parent == pid)
    return total


def snapshot(jvm: int, broker: int) -> dict[str, float]:
    procs = processes()
    jvm_own = _cpu(procs[jvm][1], children=False)
    out = {"python_workers": tree_cpu(jvm, procs) - jvm_own,
           "broker": tree_cpu(broker, procs), "driver": time.process_time(), "jvm_total": jvm_own}
    grouped = {name: 0.0 for name, _ in THREAD_GROUPS}
    for tid in os.listdir(f"/proc/{jvm}/task"):
        st = _stat(f"/proc/{jvm}/task/{tid}/stat")
        if st is None:
            continue
        for name, prefixes in THREAD_GROUPS:
            if st[0].startswith(prefixes):
                grouped[name] += _cpu(st[1], children=False)
                break
    out.update(grouped)
    return out


def delta(before: dict, after: dict) -> dict:
    d = {k: after[k] - before[k] for k in before}
    # threads that ended (task threads are pooled, but may time out) fall into jvm_other
    d["jvm_other"] = d["jvm_total"] - sum(d[name] for name, _ in THREAD_GROUPS)
    return d


def parse_case(text: str) -> tuple[str, dict]:
    name, _, opts = text.partition(":")
    return name, dict(kv.split("=", 1) for kv in opts.split(",") if kv)


def reader_in_process(bootstrap: str, topic: str, parts: int, n: int, repeat: int, **options) -> float:
    """Median CPU-seconds of the reader's `read_range` over the whole topic in this process."""
    import gc

    from kafkasql_magic.kafka.source import KafkaBatchReader
    from kafkasql_magic.kafka.source_options import SourceOptions

    reader = KafkaBatchReader(SourceOptions.parse({"bootstrap.servers": bootstrap, "topic": topic, **options},
                                                  streaming=False))
    rounds = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        rows = sum(b.num_rows for r in reader.partitions() for b in reader.read(r))
        rounds.append(time.process_time() - t0)
        assert rows == n, rows
    return statistics.median(rounds)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", action="append", default=[], help="name:option=value,... (source options)")
    ap.add_argument("--conf", action="append", default=[], help="spark conf key=value for the session")
    ap.add_argument("--skip-in-process", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "source-cpu.json"))
    args = ap.parse_args(argv)

    from ingest import machine_facts, make_records, spark_session, write_report

    from kafkasql_magic.local import LocalStack, produce

    n, parts = args.records, args.partitions
    cases = {"count_headers": {}, "count_no_headers": {"includeHeaders": "false"}}
    cases.update(parse_case(c) for c in args.case)
    load = [round(os.getloadavg()[0], 2)]
    with LocalStack() as stack:
        bootstrap, topic = stack.bootstrap_servers, f"bench-source-cpu-{os.getpid()}"
        produce(bootstrap, topic, make_records(n), create_partitions=parts)
        in_process = {} if args.skip_in_process else {
            name: reader_in_process(bootstrap, topic, parts, n, args.repeat, **opts)
            for name, opts in cases.items()}
        spark = spark_session(2, dict(kv.split("=", 1) for kv in args.conf))
        jvm = spark.sparkContext._gateway.proc.pid

        def count(opts):
            rows = spark.read.format("kafkasql").options(**{"bootstrap.servers": bootstrap, "topic": topic,
                                                            **opts}).load().count()
            assert rows == n, rows

        count({})  # warm-up: Python workers started, reader imported, JIT warmed
        rounds: dict[str, list] = {name: [] for name in cases}
        walls: dict[str, list] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, opts in cases.items():
                before = snapshot(jvm, stack.broker.pid)
                t0 = time.perf_counter()
                count(opts)
                walls[name].append(time.perf_counter() - t0)
                rounds[name].append(delta(before, snapshot(jvm, stack.broker.pid)))
            load.append(round(os.getloadavg()[0], 2))
        spark.stop()

    def per_million(seconds: float) -> float:
        return round(seconds * 1_000_000 / n, 3)

    keys = ("python_workers", "jvm_tasks", "jvm_gc", "jvm_jit", "jvm_other", "broker", "driver")
    results = {}
    for name, rs in rounds.items():
        row = {k: per_million(statistics.median(r[k] for r in rs)) for k in keys}
        row["total"] = per_million(statistics.median(sum(r[k] for k in keys) for r in rs))
        row["jvm"] = per_million(statistics.median(r["jvm_total"] for r in rs))
        if name in in_process:
            row["reader_in_process"] = per_million(in_process[name])
        row["wall_rows_per_s"] = round(n / statistics.median(walls[name]))
        row["rounds"] = [{k: per_million(r[k]) for k in ("python_workers", "jvm_tasks", "jvm_jit", "jvm_total")}
                         for r in rs]
        results[name] = row
    out = {"cores": os.cpu_count(), "records": n, "partitions": parts, "rounds": args.repeat,
           "cases": {name: cases[name] for name in cases}, "spark_conf": args.conf,
           "cpu_s_per_million_records": results, "load_average_1min": load,
           "machine": machine_facts(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(out, indent=2))
    write_report(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
