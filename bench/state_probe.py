"""Keyed state probe: what a state call costs in Spark's state store, seen from Python.

    python bench/state_probe.py [--keys 1000,10000] [--rows-per-key 1,10,100]
                                [--max-rows 1000000] [--batches 3] [--variants a,b,...]
                                [--no-timers] [--out bench/results/state-probe.json]

A keyed COUNT/SUM over an input of K distinct keys x R rows per key per micro-batch, read from
Parquet files (one file per micro-batch, `maxFilesPerTrigger` 1), so that the input costs little
and the state is what is measured; the sink is `noop`. State store: RocksDB with changelog
checkpointing, local[2], shuffle partitions 2 (as the integration tests' session). Variants:

  groupby_agg        Spark's own streaming `groupBy(k).agg(count, sum)` (update mode)
  apply_in_pandas    `applyInPandasWithState`, (count, sum) in GroupState
  tws_pandas_none    `transformWithStateInPandas` touching no state (the API's own cost per key)
  tws_pandas_value   ... ValueState get + update per key
  tws_pandas_list    ... ListState appendList per key (the key's values, one call)
  tws_pandas_map     ... MapState getValue + updateValue per key (one user key)
  tws_pandas_bucket  ... grouped by k % 256, MapState keyed by k: one handler call per bucket,
                     the bucket's keys aggregated by pandas, getValue + updateValue per key
  tws_row_*          the same four with the Row-based `transformWithState`

Every processor times its own state calls (perf_counter around each call, in the Python worker)
and writes the totals to a file at close(): that is the measured microseconds per state call.
From each micro-batch's `triggerExecution` time, a least-squares fit per variant over the sizes
gives ms per batch (fixed), us per key and us per row. CPU seconds of the whole process tree
(driver, JVM, Python workers; sampled with psutil, bench/proctree.py) per million rows, for the whole query (first batch included).
Then: event-time timers and processing-time TTL, whether they work and what they cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from proctree import TreeSampler  # noqa: E402
from state_processors import (  # noqa: E402
    OUT, PROCESSORS, ROW_OUT, TimerProcessor, TtlProcessor, apply_in_pandas_count,
)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
VARIANTS = ["groupby_agg", "apply_in_pandas"] + [f"tws_{api}_{kind}" for api in ("pandas", "row")
                                                  for kind in ("none", "value", "list", "map")] + ["tws_pandas_bucket"]
# the full size grid for these; the others at the sizes with one row per key and ten rows per key
GRID_VARIANTS = {"groupby_agg", "apply_in_pandas", "tws_pandas_value", "tws_row_value", "tws_pandas_none"}


def spark_session(unix_socket: bool = False):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench"), str(ROOT),
                                                            os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("kafkasql-bench-state")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
             .config("spark.python.authenticate.socketTimeout", "120s")
             .config("spark.driver.memory", "2g")
             .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
             .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
             .config("spark.python.unix.domain.socket.enabled", str(unix_socket).lower())
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_batches(folder: Path, keys: int, rows_per_key: int, batches: int, key_offset=None, ts=None) -> None:
    """`batches` Parquet files of keys x rows_per_key rows (k BIGINT, v BIGINT, ts TIMESTAMP)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for b in range(batches):
        start = (key_offset or (lambda i: 0))(b)
        k = np.tile(np.arange(start, start + keys, dtype=np.int64), rows_per_key)
        v = np.arange(k.size, dtype=np.int64) % 7 + 1
        seconds = (ts or (lambda i: i))(b)
        t = pa.array(np.full(k.size, seconds * 1_000_000, dtype=np.int64), pa.timestamp("us", tz="UTC"))
        tmp = folder / f".b{b:04d}.parquet"
        pq.write_table(pa.table({"k": k, "v": v, "ts": t}), tmp)
        tmp.rename(folder / f"b{b:04d}.parquet")


def stream(spark, folder: Path):
    return (spark.readStream.schema("k BIGINT, v BIGINT, ts TIMESTAMP").option("maxFilesPerTrigger", 1)
            .parquet(str(folder)))


def build(spark, variant: str, df, timing_dir: str):
    from pyspark.sql import functions as F

    if variant == "groupby_agg":
        return df.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")), "update"
    if variant == "apply_in_pandas":
        from pyspark.sql.streaming.state import GroupStateTimeout

        return df.groupBy("k").applyInPandasWithState(apply_in_pandas_count, OUT, "n LONG, s LONG", "update",
                                                      GroupStateTimeout.NoTimeout), "update"
    _, api, kind = variant.split("_")
    processor = PROCESSORS[(api, kind)](timing_dir, variant)
    if kind == "bucket":
        df = df.withColumn("b", F.col("k") % 256).select("b", "k", "v")
        grouped = df.groupBy("b")
    else:
        grouped = df.groupBy("k")
    if api == "pandas":
        return grouped.transformWithStateInPandas(processor, OUT, "Update", "None"), "update"
    return grouped.transformWithState(processor, ROW_OUT, "Update", "None"), "update"


def run_query(spark, frame, mode: str, checkpoint: Path, kinds=None, until_rows=None):
    """Runs `frame` over the files there are (availableNow), or, with `until_rows`, until that
    many rows were read: a ProcessingTime processor runs a batch at every trigger even without
    data, so availableNow never ends for it. The sink is `noop`, or, given a dict `kinds`, one
    that counts the output rows by their `kind` column into it."""
    writer = frame.writeStream.outputMode(mode).option("checkpointLocation", str(checkpoint))
    if kinds is None:
        writer = writer.format("noop")
    else:
        def count(batch, _):
            for row in batch.groupBy("kind").count().collect():
                kinds[row["kind"]] = kinds.get(row["kind"], 0) + row["count"]
        writer = writer.foreachBatch(count)
    sampler, t0 = TreeSampler(), time.perf_counter()
    if until_rows is None:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.start()
        while sum(p.numInputRows for p in query.recentProgress) < until_rows and query.exception() is None:
            time.sleep(0.1)
        query.stop()
    wall, cpu = time.perf_counter() - t0, sampler.stop()
    if query.exception():
        raise RuntimeError(str(query.exception()))
    batches = [{"rows": p["numInputRows"], "ms": p["durationMs"].get("triggerExecution"),
                "add_batch_ms": p["durationMs"].get("addBatch"),
                "state_rows_total": sum(s.get("numRowsTotal", 0) for s in p.get("stateOperators", [])),
                "state_commit_ms": sum(s.get("commitTimeMs", 0) for s in p.get("stateOperators", []))}
               for p in (json.loads(x.json) for x in query.recentProgress) if p["numInputRows"]]
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "batches": batches}


def read_timings(timing_dir: str, variant: str) -> dict:
    calls, seconds, cpu, keys = 0, 0.0, 0.0, 0
    for path in Path(timing_dir).glob(f"{variant}.*"):
        for line in path.read_text().splitlines():
            c, s, p, k = line.split()
            calls, seconds, cpu, keys = calls + int(c), seconds + float(s), cpu + float(p), keys + int(k)
    return {"state_calls": calls, "state_call_us": round(seconds / calls * 1e6, 2) if calls else None,
            "state_call_python_cpu_us": round(cpu / calls * 1e6, 2) if calls else None, "handler_calls": keys}


def fit(points):
    """Least squares: batch ms = fixed + us_per_key * keys / 1000 + us_per_row * rows / 1000."""
    import numpy as np

    if len({(k, r) for k, r, _ in points}) < 3:
        return None
    a = np.array([[1.0, k / 1000, r / 1000] for k, r, _ in points])
    y = np.array([ms for _, _, ms in points])
    (fixed, per_key, per_row), *_ = np.linalg.lstsq(a, y, rcond=None)
    return {"batch_ms": round(fixed, 1), "us_per_key": round(per_key, 2), "us_per_row": round(per_row, 3)}


def probe_sizes(spark, work: Path, sizes, variants, batches):
    runs = []
    for keys, rpk in sizes:
        data = work / f"in-{keys}-{rpk}"
        write_batches(data, keys, rpk, batches)
        for variant in variants:
            if variant not in GRID_VARIANTS and rpk not in (1, 10):
                continue
            timing_dir = tempfile.mkdtemp(dir=work, prefix="timing-")
            frame, mode = build(spark, variant, stream(spark, data), timing_dir)
            result = run_query(spark, frame, mode, work / f"ck-{variant}-{keys}-{rpk}")
            steady = result["batches"][1:] or result["batches"]
            rows = sum(b["rows"] for b in result["batches"])
            run = {"variant": variant, "keys": keys, "rows_per_key": rpk, **result, **read_timings(timing_dir, variant),
                   "steady_batch_ms": round(sum(b["ms"] for b in steady) / len(steady), 1),
                   "steady_rows_per_s": round(sum(b["rows"] for b in steady) / (sum(b["ms"] for b in steady) / 1000)),
                   "cpu_s_per_million_rows": round(result["cpu_s"] / rows * 1e6, 2)}
            runs.append(run)
            print(json.dumps({k: v for k, v in run.items() if k != "batches"}), flush=True)
        shutil.rmtree(data)
    return runs


def summarize(runs):
    """Per variant: the fit of wall-clock batch times, the state calls' own wall and Python CPU
    time, and CPU (whole process tree) per key and per state call, the latter by difference with
    the processor of the same API that touches no state, at the same size."""
    out = {}
    by_size = {(r["variant"], r["keys"], r["rows_per_key"]): r for r in runs}
    for variant in dict.fromkeys(r["variant"] for r in runs):
        mine = [r for r in runs if r["variant"] == variant]
        points = [(r["keys"], r["keys"] * r["rows_per_key"], b["ms"]) for r in mine for b in r["batches"][1:]]
        calls = sum(r["state_calls"] for r in mine)
        summary = {
            "fit": fit(points),
            "state_call_us": round(sum(r["state_call_us"] * r["state_calls"] for r in mine) / calls, 2)
            if calls else None,
            "state_call_python_cpu_us": round(sum(r["state_call_python_cpu_us"] * r["state_calls"] for r in mine)
                                              / calls, 2) if calls else None,
            "best_steady_rows_per_s": max(r["steady_rows_per_s"] for r in mine),
            "cpu_s_per_million_rows": {f"{r['keys']}x{r['rows_per_key']}": r["cpu_s_per_million_rows"] for r in mine},
            "cpu_us_per_key_and_batch": {f"{r['keys']}x{r['rows_per_key']}": round(
                r["cpu_s"] / (r["keys"] * len(r["batches"])) * 1e6, 1) for r in mine},
        }
        parts = variant.split("_")
        if variant.startswith("tws_") and parts[2] not in ("none", "bucket"):
            diffs = [(r["cpu_s"] - base["cpu_s"], r["state_calls"]) for r in mine
                     if (base := by_size.get((f"tws_{parts[1]}_none", r["keys"], r["rows_per_key"])))]
            if diffs and sum(c for _, c in diffs):
                summary["cpu_us_per_state_call_by_difference"] = round(
                    sum(d for d, _ in diffs) / sum(c for _, c in diffs) * 1e6, 1)
        out[variant] = summary
    return out


def probe_timers(spark, work: Path, keys: int) -> dict:
    """Event-time timers: keys of batch b (ts = 60 s * b) register a timer at ts + 10 s; the
    watermark (delay 0) passes it two batches later, when the timer emits the key and clears it.
    The same input through ValueState without timers gives the cost of the timers by difference."""

    result = {}
    data = work / "in-timers"
    write_batches(data, keys, 1, 4, key_offset=lambda b: b * keys, ts=lambda b: 60 * b)
    for label, time_mode, processor in (("event_time_timers", "EventTime", TimerProcessor(True)),
                                        ("same_without_timers", "None", TimerProcessor(False))):
        df = stream(spark, data)
        if time_mode == "EventTime":
            df = df.withWatermark("ts", "0 seconds")
        frame = df.groupBy("k").transformWithStateInPandas(processor, "k LONG, kind STRING", "Append", time_mode)
        kinds = {}
        run = run_query(spark, frame, "append", work / f"ck-{label}", kinds)
        result[label] = {**run, "output_rows_by_kind": kinds}
    fired = result["event_time_timers"]["output_rows_by_kind"].get("timer", 0)
    result["timers_work"] = fired >= 2 * keys  # batches 0 and 1 expire when batches 2 and 3 advance the watermark
    with_t = sum(b["ms"] for b in result["event_time_timers"]["batches"])
    without = sum(b["ms"] for b in result["same_without_timers"]["batches"])
    result["timer_us_per_key_by_difference"] = round((with_t - without) * 1000 / (4 * keys), 2)
    shutil.rmtree(data)
    return result


def probe_ttl(spark, work: Path, keys: int, ttl_ms: int = 2000) -> dict:
    """Processing-time TTL: a first run sets a ValueState with a TTL for every key; after the TTL
    has passed, a second run (same checkpoint, the same keys) finds none of them. A TTL of an hour
    finds all of them. Batch times against the same processor without TTL."""
    result = {}
    for label, ttl in (("ttl_expired", ttl_ms), ("ttl_hour", 3_600_000), ("no_ttl", None)):
        data = work / f"in-{label}"
        write_batches(data, keys, 1, 1)
        frame = stream(spark, data).groupBy("k").transformWithStateInPandas(
            TtlProcessor(ttl), "k LONG, kind STRING", "Update", "ProcessingTime" if ttl else "None")
        first = run_query(spark, frame, "update", work / f"ck-{label}", {}, until_rows=keys)
        time.sleep(ttl_ms / 1000 + 1.5)
        (data / "b0000.parquet").rename(data / "b0001.parquet")  # a new file: the same keys again
        frame = stream(spark, data).groupBy("k").transformWithStateInPandas(
            TtlProcessor(ttl), "k LONG, kind STRING", "Update", "ProcessingTime" if ttl else "None")
        kinds = {}
        second = run_query(spark, frame, "update", work / f"ck-{label}", kinds, until_rows=keys)
        result[label] = {"first": first, "second": second, "second_output_rows_by_kind": kinds}
    result["ttl_works"] = (result["ttl_expired"]["second_output_rows_by_kind"].get("missing", 0) == keys
                           and result["ttl_hour"]["second_output_rows_by_kind"].get("found", 0) == keys)
    ms = {label: result[label]["first"]["batches"][0]["ms"] + result[label]["second"]["batches"][0]["ms"]
          for label in ("ttl_hour", "no_ttl")}
    result["ttl_us_per_key_by_difference"] = round((ms["ttl_hour"] - ms["no_ttl"]) * 1000 / (2 * keys), 2)
    return result


def machine() -> dict:
    import pandas
    import pyarrow
    import pyspark

    java = os.popen("java -version 2>&1").read().splitlines()
    return {"cpu_count": os.cpu_count(), "load_average_start": list(os.getloadavg()), "python": sys.version.split()[0],
            "pyspark": pyspark.__version__, "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
            "java": java[0] if java else None, "state_store": ROCKSDB, "changelog_checkpointing": True,
            "master": "local[2]", "shuffle_partitions": 2}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", default="1000,10000", help="distinct keys per batch, e.g. 1000,10000,100000")
    p.add_argument("--rows-per-key", default="1,10,100")
    p.add_argument("--max-rows", type=int, default=1_000_000, help="skip sizes with more rows per batch")
    p.add_argument("--batches", type=int, default=3, help="micro-batches per run (the first inserts the keys)")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--timer-keys", type=int, default=10_000)
    p.add_argument("--no-timers", action="store_true")
    p.add_argument("--socket", choices=("tcp", "unix"), default="unix",
                   help="how Python workers and the state server talk to the JVM (the project uses unix)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "state-probe.json"))
    args = p.parse_args(argv)

    sizes = [(k, r) for k in map(int, args.keys.split(",")) for r in map(int, args.rows_per_key.split(","))
             if k * r <= args.max_rows]
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        p.error(f"unknown variants {sorted(unknown)}; known: {VARIANTS}")
    facts = machine()
    spark = spark_session(args.socket == "unix")
    work = Path(tempfile.mkdtemp(prefix="state-probe-"))
    started = time.perf_counter()
    try:
        runs = probe_sizes(spark, work, sizes, variants, args.batches)
        report = {"machine": facts, "args": vars(args), "runs": runs, "summary": summarize(runs)}
        if not args.no_timers:
            report["timers"] = probe_timers(spark, work, args.timer_keys)
            report["ttl"] = probe_ttl(spark, work, args.timer_keys)
        report["machine"]["load_average_end"] = list(os.getloadavg())
        report["seconds"] = round(time.perf_counter() - started, 1)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"summary": report["summary"], **{k: {x: y for x, y in report[k].items() if not isinstance(y, dict)}
                                                      for k in ("timers", "ttl") if k in report}}, indent=1))
    print(f"wrote {args.out} ({report['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
