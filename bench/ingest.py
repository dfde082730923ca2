"""Ingest benchmark: the `kafkasql` Spark source against a plain confluent-kafka consume loop.

    python bench/ingest.py [--records N] [--partitions 4] [--repeat 3] [--only case,case]
                           [--out bench/results/ingest.json]

Produces N records (~100-byte JSON values, a key, two headers) into a fresh topic on the
embedded broker, then measures, on the same machine and broker:
  a) raw_consume         one process, `consume(10000)` counting only (librdkafka defaults)
  b) source_count        spark.read.format("kafkasql") bounded, count()
  c) source_json_decode  the same through the project's planner: `CREATE STREAM ... (value_format
                         JSON)` + `SELECT` (case-insensitive field matching, typed columns, the
                         decode-error column), aggregated so every decoded field is evaluated
and, for the key/value formats and seek work:
  json_key_value_decode / avro_key_value_decode   1M records with a JSON (resp. Avro, Confluent
                         framing through the embedded registry) key and value, decoded by the planner
  seek_one_offset vs full_scan   `WHERE ROWPARTITION = 0 AND ROWOFFSET = k ... LIMIT 1` against a
                         query that must read the whole topic to find the same record: records
                         fetched and seconds (in `seek`)
  json_decode_header_key / json_decode_all_headers   the JSON value's id with one HEADER('seq')
                         column, resp. the HEADERS array, through the planner
  json_decode_headers_declared_unused / ..._every_header   (c) over a source that declares a
                         HEADERS column the query does not use: headers chosen per query (none
                         read), against every header read (what choosing per source did)
  source_json_decode_every_column / json_key_value_decode_every_column   (c) and the JSON key +
                         value case with reads carrying every raw column (engine.tree.reads
                         off: a decoded record's bytes, the topic, the timestamp), as before
  source_json_decode_planner_only / json_key_value_decode_planner_only /
  avro_key_value_decode_planner_only   (c), the JSON and the AVRO key + value cases with decoding
                         in the reader's worker (kafka.worker_decoding) switched off: the
                         planner's Spark expressions (JSON) or its per-batch Arrow UDF (AVRO)
and the query cases of `bench/queries.py` (a windowed aggregation, a stream-table join) as push
queries over the same topic.
`spark_from_json_decode` is (c) with Spark's plain from_json (exact-case field names): the cost
of ksql's case-insensitive matching is the gap between the two.
Spark start-up (and Python worker start-up, via a warm-up read) is excluded. Also reported:
`raw_consume_tuned` (the reader's librdkafka settings, GC paused: the best a single process
can do), `source_count_no_headers` / `source_json_decode_no_headers` (includeHeaders=false,
what a planner can pass when no header column is used) and `json_decode_only_cached` (the
decode of (c) over the same values cached in Spark: Spark's own JSON cost, the bound of c).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VALUE_SCHEMA = "id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING"

RAW_CONSUMER = r"""
import gc, json, sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, partitions, total, tuned = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
conf = {"bootstrap.servers": bootstrap, "group.id": "bench-raw", "enable.auto.commit": False,
        "enable.partition.eof": True}
if tuned:
    from kafkasql_magic.kafka.arrow_batch import CONSUMER_DEFAULTS
    conf.update(CONSUMER_DEFAULTS); conf["group.id"] = "bench-raw"
    gc.disable()
c = Consumer(conf)
c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
t0 = time.perf_counter(); n = 0; eof = set()
while len(eof) < partitions or n < total:
    for m in c.consume(10000, 1.0):
        if m.error() is None:
            n += 1
        else:
            eof.add(m.partition())
elapsed = time.perf_counter() - t0
c.close()
print(json.dumps({"rows": n, "seconds": elapsed}))
"""


def make_records(n: int):
    for i in range(n):
        value = json.dumps({"id": i, "name": f"user-{i}", "amount": 12.5 + (i % 100),
                            "ts": 1700000000000 + i, "tags": "a,b"}, separators=(",", ":"))
        value = value[:-1] + ',"pad":"' + "x" * max(0, 100 - len(value) - 10) + '"}'
        yield {"key": str(i).encode(), "value": value.encode(),
               "headers": [("source", b"bench"), ("seq", str(i).encode())]}


def write_report(path, report: dict, indent: int = 2) -> None:
    """A bench's JSON report at `path` (its folder made), and where it went."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=indent) + "\n")
    print(f"wrote {out}")


def machine_facts() -> dict:
    import confluent_kafka
    import pyarrow
    import pyspark

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "cpu_model": cpu, "memory_gb": mem_gb, "platform": platform.platform(),
        "python": platform.python_version(), "pyspark": pyspark.__version__,
        "confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0],
        "pyarrow": pyarrow.__version__, "broker": "tansu 0.6.0 (embedded, memory storage)",
    }


def raw_consume(bootstrap, topic, partitions, total, tuned=False) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", RAW_CONSUMER, bootstrap, topic, str(partitions),
                          str(total), "1" if tuned else "0"],
                         env=env, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["rows"] == total, res
    return total / res["seconds"]


def spark_session(cores: int, conf: dict | None = None):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{cores}]").appName("kafkasql-bench-ingest")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", str(cores))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             # a loaded shared machine: give Python workers time to connect back
             .config("spark.python.authenticate.socketTimeout", "120s")
             .config("spark.driver.memory", "2g")
             .config("spark.python.unix.domain.socket.enabled", "true"))  # as the project's session
    from kafkasql_magic.sparkenv import LOCAL_CONF

    spark = spark.config("spark.driver.extraJavaOptions", LOCAL_CONF["spark.driver.extraJavaOptions"])  # its JIT too
    for key, value in (conf or {}).items():
        spark = spark.config(key, value)
    spark = spark.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from kafkasql_magic.kafka.source import register

    register(spark)
    return spark


class SqlCases:
    """The cases that go through SQL: key+value decode per format, and seek against scan."""

    AVRO_KEY = {"type": "record", "name": "BenchKey", "fields": [{"name": "k", "type": "long"}]}
    AVRO_VALUE = {"type": "record", "name": "BenchValue", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "amount", "type": "double"}, {"name": "ts", "type": "long"}, {"name": "tags", "type": "string"}]}

    def __init__(self, session, stack, n, parts):
        self.session, self.stack, self.n, self.parts = session, stack, n, parts

    def produce_key_value_topics(self):
        import io

        import fastavro
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

        from kafkasql_magic.local import produce

        b = self.stack.bootstrap_servers
        produce(b, "kv-json", ({"key": json.dumps({"k": i}), "value": r["value"], "partition": i % self.parts}
                               for i, r in enumerate(make_records(self.n))), create_partitions=self.parts)
        client = SchemaRegistryClient({"url": self.stack.endpoints["schema.registry.url"]})
        ids = {role: client.register_schema(f"kv-avro-{role}", Schema(json.dumps(s), "AVRO"))
               for role, s in (("key", self.AVRO_KEY), ("value", self.AVRO_VALUE))}
        key_schema, value_schema = fastavro.parse_schema(self.AVRO_KEY), fastavro.parse_schema(self.AVRO_VALUE)

        def framed(schema_id, schema, record):
            out = io.BytesIO()
            out.write(b"\x00" + schema_id.to_bytes(4, "big"))
            fastavro.schemaless_writer(out, schema, record)
            return out.getvalue()

        produce(b, "kv-avro", ({"key": framed(ids["key"], key_schema, {"k": i}),
                                "value": framed(ids["value"], value_schema, json.loads(r["value"])),
                                "partition": i % self.parts}
                               for i, r in enumerate(make_records(self.n))), create_partitions=self.parts)
        self.session.sql("CREATE STREAM kv_json (k STRUCT<k BIGINT> KEY, id BIGINT, name STRING, amount DOUBLE) "
                         "WITH (kafka_topic='kv-json', format='JSON');"
                         "CREATE STREAM kv_avro (k BIGINT KEY, id BIGINT, name STRING, amount DOUBLE) "
                         "WITH (kafka_topic='kv-avro', format='AVRO');")

    def seek(self) -> dict:
        """One record by partition and offset, against finding it with a full scan."""
        target = self.n // self.parts // 2
        t0 = time.perf_counter()
        one = self.session.sql(f"SELECT id FROM bench WHERE ROWPARTITION = 0 AND ROWOFFSET = {target} "
                               "EMIT CHANGES LIMIT 1;")
        seek_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        scanned = self.session.dataframe(f"SELECT id FROM bench WHERE id = {int(one.ID[0])};").collect()
        scan_s = time.perf_counter() - t0
        assert len(one) == 1 and len(scanned) == 1
        return {"records_fetched": {"seek_one_offset": int(one.attrs["records_read"]), "full_scan": self.n},
                "seconds": {"seek_one_offset": round(seek_s, 3), "full_scan": round(scan_s, 3)}}


def retried(fn, attempts: int = 3):
    """`fn()`, tried again when Spark's Python planner worker did not start within Spark's fixed
    connect-back time (it happens on a heavily loaded machine, and is no part of what is measured)."""
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:
            if "failed to connect back" not in str(exc) or attempt == attempts - 1:
                raise
            print(f"retrying after: {str(exc).splitlines()[0][:200]}")


def every_column(fn, session):
    """`fn()` with reads carrying every raw column (the session property
    `kafkasql.prune.raw.columns` off): the raw bytes of records decoded in the worker, the topic
    and the timestamp, as before reads were pruned."""
    from kafkasql_magic.engine.api import PRUNE_RAW_COLUMNS

    session.sql(f"SET '{PRUNE_RAW_COLUMNS}'='false';")
    try:
        return fn()
    finally:
        session.sql(f"UNSET '{PRUNE_RAW_COLUMNS}';")


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the median of each case counts")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ingest.json"))
    ap.add_argument("--only", default="", help="comma-separated cases to run (both raw consumers always run)")
    args = ap.parse_args(argv)

    from kafkasql_magic.local import LocalStack, produce

    cores = os.cpu_count() or 1
    n, parts = args.records, args.partitions
    results: dict = {}
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        topic = f"bench-ingest-{os.getpid()}"
        t0 = time.perf_counter()
        produce(bootstrap, topic, make_records(n), create_partitions=parts)
        produce_rate = n / (time.perf_counter() - t0)
        print(f"produced {n:,} records into {parts} partitions: {produce_rate:,.0f} rows/s")

        spark = spark_session(cores)
        from pyspark.sql import functions as F

        def source(**extra):
            opts = {"bootstrap.servers": bootstrap, "topic": topic, **extra}
            return spark.read.format("kafkasql").options(**opts).load()

        # warm-up: starts the Python workers and imports the reader in them
        produce(bootstrap, topic + "-warmup", make_records(1000), create_partitions=cores)
        spark.read.format("kafkasql").options(**{"bootstrap.servers": bootstrap,
                                                  "topic": topic + "-warmup"}).load().count()

        def count(**extra):
            rows = source(**extra).count()
            assert rows == n, rows
            return rows

        import kafkasql_magic as ks

        session = ks.connect(bootstrap_servers=bootstrap, spark=spark,
                             schema_registry_url=stack.endpoints["schema.registry.url"], timeout=600)
        session.sql(f"SET 'auto.offset.reset'='earliest';"
                    f"CREATE STREAM bench (id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON');"
                    f"CREATE STREAM bench_header (id BIGINT, seq BYTES HEADER('seq')) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON');"
                    f"CREATE STREAM bench_headers (id BIGINT, hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON');"
                    f"CREATE STREAM bench_declared (id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING, "
                    f"hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON');")
        sql_cases = SqlCases(session, stack, n, parts)

        def planner_decode(stream="BENCH", columns=("ID", "NAME", "AMOUNT", "TS", "TAGS"), arrays=(),
                           every_header=False):
            text = f"SELECT {', '.join(columns)} FROM {stream};"
            frame = all_headers_frame(text) if every_header else session.dataframe(text)
            row = frame.agg(F.count(columns[0]).alias("c"),
                            *[F.max(F.size(c) if c in arrays else F.length(F.col(c).cast("string")))
                              for c in columns[1:]]).collect()[0]
            assert row["c"] == n, row
            return row

        def all_headers_frame(text):
            """The query's frame reading every header whatever it uses (what a read of a source
            with a HEADERS column did before headers were chosen per query)."""
            from kafkasql_magic.engine.columns import DROP, result_column
            from kafkasql_magic.engine.api import prepare

            stmt, _ = next(iter(session._statements(text, session.dialect_now)))
            prepared = prepare(session, stmt, keep_headers=True)
            return prepared.built.frame.where(~F.col(DROP)).select(
                *[F.col(result_column(i)).alias(n) for i, n in enumerate(prepared.plan.names)])

        def planner_only(fn):
            """`fn()` with JSON values decoded by the planner's Spark expressions alone (no
            decoding in the reader's worker: kafka.json_columns), as before it existed."""
            from kafkasql_magic.engine.api import DECODE_IN_READER

            session.sql(f"SET '{DECODE_IN_READER}'='false';")
            try:
                return fn()
            finally:
                session.sql(f"UNSET '{DECODE_IN_READER}';")

        def decode(frame=None):
            frame = source() if frame is None else frame
            decoded = frame.select(F.from_json(F.col("value").cast("string"), VALUE_SCHEMA).alias("v"))
            row = decoded.agg(F.count("v.id").alias("c"), F.sum("v.amount"), F.max("v.ts"),
                              F.max(F.length("v.name")), F.max(F.length("v.tags"))).collect()[0]
            assert row["c"] == n, row
            return row

        # what Spark's JSON decoding alone costs: the same values from an in-memory cache
        cached = source().select("value").cache()
        assert cached.count() == n

        cases = {
            "raw_consume": lambda: raw_consume(bootstrap, topic, parts, n),
            "raw_consume_tuned": lambda: raw_consume(bootstrap, topic, parts, n, tuned=True),
            "source_count": lambda: n / timed(count),
            "source_json_decode": lambda: n / timed(planner_decode),
            "source_json_decode_planner_only": lambda: n / timed(lambda: planner_only(planner_decode)),
            "source_json_decode_every_column": lambda: n / timed(lambda: every_column(planner_decode, session)),
            "spark_from_json_decode": lambda: n / timed(decode),
            "json_decode_header_key": lambda: n / timed(lambda: planner_decode("BENCH_HEADER", ("ID", "SEQ"))),
            "json_decode_all_headers": lambda: n / timed(lambda: planner_decode("BENCH_HEADERS", ("ID", "HS"), ("HS",))),
            "json_decode_headers_declared_unused": lambda: n / timed(lambda: planner_decode("BENCH_DECLARED")),
            "json_decode_headers_declared_every_header": lambda: n / timed(
                lambda: planner_decode("BENCH_DECLARED", every_header=True)),
            "json_key_value_decode": lambda: n / timed(lambda: planner_decode("KV_JSON", ("K", "ID", "NAME", "AMOUNT"))),
            "json_key_value_decode_every_column": lambda: n / timed(
                lambda: every_column(lambda: planner_decode("KV_JSON", ("K", "ID", "NAME", "AMOUNT")), session)),
            "json_key_value_decode_planner_only": lambda: n / timed(
                lambda: planner_only(lambda: planner_decode("KV_JSON", ("K", "ID", "NAME", "AMOUNT")))),
            "avro_key_value_decode": lambda: n / timed(lambda: planner_decode("KV_AVRO", ("K", "ID", "NAME", "AMOUNT"))),
            "avro_key_value_decode_planner_only": lambda: n / timed(
                lambda: planner_only(lambda: planner_decode("KV_AVRO", ("K", "ID", "NAME", "AMOUNT")))),
            "source_count_no_headers": lambda: n / timed(lambda: count(includeHeaders="false")),
            "source_json_decode_no_headers": lambda: n / timed(lambda: decode(source(includeHeaders="false"))),
            "json_decode_only_cached": lambda: n / timed(lambda: decode(cached)),
        }
        from queries import query_cases

        cases.update(query_cases(session, bootstrap, n))
        if args.only:
            wanted = {"raw_consume", "raw_consume_tuned", *args.only.split(",")}
            unknown = wanted - set(cases) - {"seek"}
            if unknown:
                raise SystemExit(f"unknown cases: {', '.join(sorted(unknown))}")
            cases = {name: run for name, run in cases.items() if name in wanted}
        # Interleaved rounds, median of each: the machine may be shared, and a burst of other
        # work should land on one round of a case, not decide its figure.
        if any("key_value_decode" in name for name in cases):
            sql_cases.produce_key_value_topics()
        seek = None
        if not args.only or "seek" in args.only.split(","):
            try:
                seek = retried(sql_cases.seek)
            except Exception as exc:  # recorded, so the rates of every other case are not lost
                seek = {"error": str(exc).splitlines()[0][:300]}
        rounds: dict[str, list[float]] = {}
        load_before = os.getloadavg()[0]
        for _ in range(args.repeat):
            for name, run in cases.items():
                rounds.setdefault(name, []).append(run())
        rates = {name: statistics.median(values) for name, values in rounds.items()}
        load_after = os.getloadavg()[0]
        cached.unpersist()
        spark.stop()

    tuned = rates["raw_consume_tuned"]
    ratios = {"ratio_b_a": "source_count", "ratio_c_a": "source_json_decode", "ratio_json_kv_a": "json_key_value_decode",
              "ratio_avro_kv_a": "avro_key_value_decode", "ratio_windowed_a": "windowed_aggregation",
              "ratio_join_a": "stream_table_join", "ratio_join_group_by_a": "stream_table_group_by",
              "ratio_table_join_a": "table_table_join", "ratio_table_fk_join_a": "table_fk_join",
              "ratio_table_three_join_a": "table_three_join"}
    results = {
        "cores": cores,
        "records": n,
        "partitions": parts,
        "value_bytes": len(next(make_records(1))["value"]),
        "produce_rows_per_s": round(produce_rate),
        "rows_per_s": {k: round(v) for k, v in rates.items()},
        "rows_per_s_rounds": {k: [round(v) for v in values] for k, values in rounds.items()},
        "vs_tuned_consumer": {k: round(v / tuned, 3) for k, v in rates.items()},
        **{ratio: round(rates[case] / rates["raw_consume"], 3) for ratio, case in ratios.items()
           if case in rates and "raw_consume" in rates},
        **{f"{ratio}_tuned": round(rates[case] / tuned, 3) for ratio, case in list(ratios.items())[:2] if case in rates},
        "seek": seek,
        "rounds": args.repeat,
        "load_average_1min": [round(load_before, 2), round(load_after, 2)],
        "machine": machine_facts(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for name, rate in rates.items():
        print(f"{name:>30}: {rate:>12,.0f} rows/s  ({rate / rates['raw_consume_tuned']:.2f} x tuned consumer)")
    print("ratios to librdkafka defaults (a):", {k: v for k, v in results.items() if k.startswith("ratio_")},
          f"(cores: {cores})")
    print(f"seek: {seek}")
    out = Path(args.out)
    write_report(out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
