"""Where a decoded query's CPU goes: CPU-seconds per million records per process and stage, for
the JSON value, JSON key + value and AVRO key + value cases of `bench/ingest.py`.

    python bench/decode_stages.py [--records 400000,40000] [--repeat 3] [--out bench/results/decode-stages.json]

CPU time, not wall time (`/proc/<pid>/stat` of the Spark JVM, of its Python workers - the JVM's
descendants - and of the broker), so the figures hold on a shared machine. One `local[2]` session,
the ingest bench's topics. Each case is run as a chain of steps, each adding one part:

  count         the source's `count()`, no headers, no decoding: fetch, Arrow build, the JVM's intake
  worker        the same source with the query's worker decoding (source options as the planner
                passes them): + the worker's decoding and the intake of its columns
  planner       the planner's query, every result column hashed and counted: + the planner's Spark
                expressions (fallback branches, checks, bookkeeping and error columns)
  planner_agg   the ingest bench's query (an aggregation over every decoded column): + what the
                bench's aggregation adds
  planner_only  `planner` with no worker decoding (Spark's own decoding, or the AVRO UDF)
  planner_agg_prebuilt   `planner_agg` with the query's DataFrame built before the measured run:
                `planner_agg` less this is what building the query costs
  worker_columns_agg     (JSON cases) the bench's aggregation over the worker's columns of the
                shaped read as they are: `planner_agg_prebuilt` less this is what the planner's
                fallback decoding, checks and bookkeeping cost a record the worker decoded
and, beside the chain, what the raw columns a read leaves out save (engine.tree.reads):
  count_no_metadata   `count` without the four metadata columns (topic, partition, offset, timestamp)
  worker_shaped       `worker` with the planner's read shape: the raw bytes of decoded records, the
                      topic and the unused timestamp left out
  planner_agg_every_column   `planner_agg` with reads carrying every raw column (as before)

Stages are the differences between consecutive steps of the chain (and `planner_and_aggregation`,
planner_agg - worker: the hashing step has measured dearer than the aggregation, so the split
between those two says little). Each size in `--records` runs
on a broker of its own; two sizes split each step's CPU into a cost per record and a fixed cost
per query (planning, code generation, task start-up), which a small run would otherwise spread
over its few records.
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
CASES = {"json_value": ("BENCH", ("ID", "NAME", "AMOUNT", "TS", "TAGS")),
         "json_key_value": ("KV_JSON", ("K", "ID", "NAME", "AMOUNT")),
         "avro_key_value": ("KV_AVRO", ("K", "ID", "NAME", "AMOUNT"))}
def _processes() -> dict[int, tuple[int, float, float]]:
    """pid -> (parent, own CPU-seconds, reaped children's CPU-seconds)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            f = stat[stat.rindex(")") + 2:].split()
            out[int(entry)] = (int(f[1]), (int(f[11]) + int(f[12])) / CLOCK_TICKS,
                               (int(f[13]) + int(f[14])) / CLOCK_TICKS)
    return out


def split_cpu(jvm: int, broker: int) -> dict[str, float]:
    """CPU-seconds so far: the JVM itself, its Python workers (every descendant, reaped ones too),
    the broker, this driver process."""
    procs = _processes()
    workers, todo = 0.0, [jvm]
    while todo:
        pid = todo.pop()
        children = [c for c, (parent, _, _) in procs.items() if parent == pid]
        workers += sum(procs[c][1] for c in children) + procs.get(pid, (0, 0.0, 0.0))[2]
        todo.extend(children)
    broker_cpu = procs.get(broker, (0, 0.0, 0.0))
    return {"jvm": procs.get(jvm, (0, 0.0, 0.0))[1], "python_workers": workers,
            "broker": broker_cpu[1] + broker_cpu[2], "driver": time.process_time()}


def measured(jvm: int, broker: int, run) -> dict[str, float]:
    before = split_cpu(jvm, broker)
    run()
    after = split_cpu(jvm, broker)
    return {k: after[k] - before[k] for k in before}


def run_size(spark, n: int, parts: int, cases: dict, repeat: int) -> dict:
    """case -> step -> [CPU by process, per round] over a fresh broker holding n records."""
    from pyspark.sql import functions as F

    import kafkasql_magic as ks
    from ingest import SqlCases, every_column, make_records
    from kafkasql_magic.engine.decode.rows_spark import worker_decoding
    from kafkasql_magic.kafka import json_columns
    from kafkasql_magic.local import LocalStack, produce
    from kafkasql_magic.sql import parse_statement
    from kafkasql_magic.engine import api

    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        produce(bootstrap, "bench-stages", make_records(n), create_partitions=parts)
        jvm = spark.sparkContext._gateway.proc.pid
        session = ks.connect(bootstrap_servers=bootstrap, spark=spark,
                             schema_registry_url=stack.endpoints["schema.registry.url"], timeout=600)
        session.sql("CREATE STREAM bench (id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING) "
                    "WITH (kafka_topic='bench-stages', value_format='JSON');")
        SqlCases(session, stack, n, parts).produce_key_value_topics()

        def source(stream, decoding: bool, **extra):
            definition = session.catalog.get(stream)
            options = {"bootstrap.servers": bootstrap, "topic": definition.topic, "includeHeaders": "false", **extra}
            if decoding:
                options.update(worker_decoding(definition).options())
            return spark.read.format("kafkasql").options(**options).load()

        planned: dict = {}

        def shaped(stream, columns):
            """The source with the options the planner passes for the bench's query (planned once,
            outside the measured runs)."""
            if stream not in planned:
                text = f"SELECT {', '.join(columns)} FROM {stream};"
                planned[stream] = api.prepare(session, parse_statement(text)).read.options()
            return spark.read.format("kafkasql").options(**planned[stream]).load()

        def counted(frame):
            assert frame.count() == n

        def aggregated(frame, columns, aggregate=True):
            if aggregate:
                found = [F.count(columns[0])] + [F.max(F.length(F.col(c).cast("string"))) for c in columns[1:]]
            else:
                found = [F.count(F.hash(*columns))]
            row = frame.agg(*found).collect()[0]
            assert row[0] == n, row

        def planner(stream, columns, aggregate=True, in_worker=True):
            if not in_worker:
                session.sql(f"SET '{api.DECODE_IN_READER}'='false';")
            try:
                frame = session.dataframe(f"SELECT {', '.join(columns)} FROM {stream};")
            finally:
                session.sql(f"UNSET '{api.DECODE_IN_READER}';")
            aggregated(frame, columns, aggregate)

        prebuilt: dict = {}

        def planner_prebuilt(stream, columns):
            """The planner's query built before the measured run (see the warm-up below)."""
            if stream not in prebuilt:
                prebuilt[stream] = session.dataframe(f"SELECT {', '.join(columns)} FROM {stream};")
            aggregated(prebuilt[stream], columns)

        def worker_columns(stream, columns):
            """The worker's JSON columns of the shaped read as they are, named as the query names
            them: no fallback decoding, no checks, no bookkeeping."""
            definition = session.catalog.get(stream)
            found = {c.name: F.col(json_columns.COLUMN.format(i)) for i, c in enumerate(definition.value_columns)}
            keys = definition.key_columns
            if keys and keys[0].type.name == "STRUCT":
                found[keys[0].name] = F.struct(*[F.col(json_columns.KEY_COLUMN.format(i)).alias(name)
                                                 for i, (name, _) in enumerate(keys[0].type.fields)])
            else:
                found.update({c.name: F.col(json_columns.KEY_COLUMN.format(i)) for i, c in enumerate(keys)})
            aggregated(shaped(stream, columns).select(*[found[c].alias(c) for c in columns]), columns)

        def steps(stream, columns):
            return {"count": lambda: counted(source(stream, False)),
                    "count_no_metadata": lambda: counted(source(stream, False, metadataColumns="[]")),
                    "worker": lambda: counted(source(stream, True)),
                    "worker_shaped": lambda: counted(shaped(stream, columns)),
                    "planner": lambda: planner(stream, columns, aggregate=False),
                    "planner_agg": lambda: planner(stream, columns),
                    "planner_agg_prebuilt": lambda: planner_prebuilt(stream, columns),
                    **({"worker_columns_agg": lambda: worker_columns(stream, columns)}
                       if session.catalog.get(stream).value_format.name == "JSON" else {}),
                    "planner_agg_every_column": lambda: every_column(lambda: planner(stream, columns), session),
                    "planner_only": lambda: planner(stream, columns, aggregate=False, in_worker=False)}

        counted(source("BENCH", False))  # warm-up: Python workers started, the reader imported
        for stream, columns in cases.values():
            shaped(stream, columns)  # the planner's options, before anything is measured
            planner_prebuilt(stream, columns)  # and the query built beforehand, run once
        broker = stack.broker.pid
        rounds: dict = {}
        for _ in range(repeat):
            for case, (stream, columns) in cases.items():
                for step, run in steps(stream, columns).items():
                    rounds.setdefault(case, {}).setdefault(step, []).append(measured(jvm, broker, run))
    return {case: {step: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for step, runs in by_step.items()}
            for case, by_step in rounds.items()}


STAGES = {"fetch_arrow_intake": ("count", None), "worker_decode_and_intake": ("worker", "count"),
          "planner_expressions": ("planner", "worker"), "bench_aggregation": ("planner_agg", "planner"),
          "planner_and_aggregation": ("planner_agg", "worker"),
          "planner_alone_over_count": ("planner_only", "count"),
          "metadata_columns_intake": ("count", "count_no_metadata"),
          "left_out_raw_columns_worker": ("worker", "worker_shaped"),
          "left_out_raw_columns_query": ("planner_agg_every_column", "planner_agg"),
          "query_build": ("planner_agg", "planner_agg_prebuilt"),
          "fallback_checks_bookkeeping": ("planner_agg_prebuilt", "worker_columns_agg")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="400000,40000", help="one size, or a large and a small one")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated cases")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "decode-stages.json"))
    args = ap.parse_args(argv)

    from ingest import machine_facts, spark_session, write_report

    sizes = [int(x) for x in args.records.split(",")]
    cases = {name: CASES[name] for name in args.only.split(",")}
    spark = spark_session(os.cpu_count() or 1)
    load_before = os.getloadavg()[0]
    runs = {n: run_size(spark, n, args.partitions, cases, args.repeat) for n in sizes}
    load_after = os.getloadavg()[0]
    spark.stop()

    big = max(sizes)
    results: dict = {"cores": os.cpu_count(), "records": sizes, "partitions": args.partitions, "rounds": args.repeat,
                     "unit": "CPU-seconds per million records (median of rounds)", "steps": {}, "stages": {}}
    for case in cases:
        totals = {n: {step: sum(cpu.values()) for step, cpu in runs[n][case].items()} for n in sizes}
        results["steps"][case] = {
            f"{n}_records": {step: {k: round(v * 1e6 / n, 2) for k, v in cpu.items()} for step, cpu in runs[n][case].items()}
            for n in sizes}
        if len(sizes) == 2:
            small = min(sizes)
            per_record = {step: (totals[big][step] - totals[small][step]) / (big - small) for step in totals[big]}
            fixed = {step: totals[small][step] - per_record[step] * small for step in totals[big]}
            results["steps"][case]["per_record_all_processes"] = {k: round(v * 1e6, 2) for k, v in per_record.items()}
            results["steps"][case]["fixed_cpu_s_per_query"] = {k: round(v, 2) for k, v in fixed.items()}
        else:
            per_record = {step: v / big for step, v in totals[big].items()}
        results["stages"][case] = {stage: round((per_record[a] - (per_record[b] if b else 0)) * 1e6, 2)
                                   for stage, (a, b) in STAGES.items()
                                   if a in per_record and (b is None or b in per_record)}
    results.update({"load_average_1min": [round(load_before, 2), round(load_after, 2)], "machine": machine_facts(),
                    "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    print(json.dumps({"steps": results["steps"], "stages": results["stages"]}, indent=1))
    write_report(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
