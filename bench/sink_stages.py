"""Where a sink's time goes, stage by stage, old way and new way in one run on the same rows.

    python bench/sink_stages.py [--records N] [--partitions 4] [--spark]
                                [--out bench/results/sink_stages.json]

The rows are bench/ingest.py's records decoded (id BIGINT, name STRING, amount DOUBLE, ts BIGINT,
tags STRING, pad STRING), in Arrow batches of 10,000 as Spark hands them to the sink:
  encode_record_by_record   AVRO values with fastavro one record at a time (sinks.encode.frame_rows:
                            every AVRO sink before, now the fallback for nested or logical types)
  encode_by_column          the same bytes built column by column (sinks.avro_columns)
  produce_report_each       the `kafkasql_sink` writer with a Python delivery callback per record
  produce_report_errors     the writer as configured now: only failures call back
With --spark, the same records in a topic, through Spark (bounded reads, as a micro-batch):
  spark_read_decode         read and JSON-decode, written nowhere (Spark's noop sink)
  spark_read_decode_encode  and AVRO-encode the values (the Arrow UDF), written nowhere
  spark_whole_write         and produce them with the `kafkasql_sink` writer: a CSAS batch
Each figure is rows/s on this machine (cores and load average recorded with it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import machine_facts, make_records, write_report  # noqa: E402

BATCH = 10_000
COLUMNS = (("id", "BIGINT"), ("name", "STRING"), ("amount", "DOUBLE"), ("ts", "BIGINT"), ("tags", "STRING"),
           ("pad", "STRING"))


def rows_per_s(n: int, run) -> int:
    t0 = time.perf_counter()
    run()
    return round(n / (time.perf_counter() - t0))


def spark_stages(bootstrap: str, n: int, partitions: int, fields, text: str) -> dict:
    """rows/s of a sink's Spark stages over `n` records: read+decode, +encode, +produce."""
    from pyspark.sql import functions as F

    import kafkasql_magic as ks
    from kafkasql_magic.formats import FormatSpec
    from kafkasql_magic.kafka.producer import produce
    from kafkasql_magic.sinks.encode import Registered, encode

    from ingest import spark_session

    topic = f"bench-stages-spark-{os.getpid()}"
    produce(bootstrap, topic, make_records(n), create_partitions=partitions)
    session = ks.connect(bootstrap_servers=bootstrap, spark=spark_session(os.cpu_count() or 1), timeout=600)
    columns = ", ".join(f"{f.name} {f.type.name}" for f in fields)
    session.sql(f"CREATE STREAM stage_src ({columns}) WITH (kafka_topic='{topic}', value_format='JSON');")
    decoded = lambda: session.dataframe("SELECT * FROM stage_src;")  # noqa: E731
    value = encode([F.col(f.name) for f in fields], fields, FormatSpec("AVRO"), "value", Registered(1, text))
    sink = f"{topic}-out"
    produce(bootstrap, sink, [], create_partitions=partitions)
    decoded().write.format("noop").mode("overwrite").save()  # Python workers started before timing
    results = {
        "spark_read_decode_rows_per_s": rows_per_s(n, lambda: decoded().write.format("noop").mode("overwrite").save()),
        "spark_read_decode_encode_rows_per_s": rows_per_s(n, lambda: decoded().select(value.alias("value"))
                                                          .write.format("noop").mode("overwrite").save()),
        "spark_whole_write_rows_per_s": rows_per_s(n, lambda: decoded().select(value.alias("value")).write
                                                   .format("kafkasql_sink").option("bootstrap.servers", bootstrap)
                                                   .option("topic", sink).mode("append").save()),
    }
    session.stop()
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--spark", action="store_true", help="also time the Spark stages of a sink")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sink_stages.json"))
    args = ap.parse_args(argv)

    import pyarrow as pa

    from kafkasql_magic.formats import Field
    from kafkasql_magic.formats.avro_types import write_schema
    from kafkasql_magic.kafka import writer
    from kafkasql_magic.local import LocalStack
    from kafkasql_magic.kafka.producer import produce
    from kafkasql_magic.sinks import avro_columns
    from kafkasql_magic.sinks.encode import frame_rows
    from kafkasql_magic.sql import ast

    n = args.records
    fields = [Field(name.upper(), ast.Type(t)) for name, t in COLUMNS]
    names = [f.name for f in fields]
    text = json.dumps(write_schema(fields, False, "KsqlDataSourceSchema"))
    decoded = [json.loads(r["value"]) for r in make_records(n)]
    table = pa.Table.from_pylist([{k.upper(): v for k, v in row.items()} for row in decoded])
    batches = [b.to_struct_array() if hasattr(b, "to_struct_array") else pa.StructArray.from_arrays(
        b.columns, names) for b in table.to_batches(BATCH)]
    types_ = avro_columns.plan(text, names, bare=False)
    assert types_ is not None, text
    header = b"\x00\x00\x00\x00\x01"
    results: dict = {"records": n, "partitions": args.partitions}

    record_by_record: list = []
    by_column: list = []
    results["encode_record_by_record_rows_per_s"] = rows_per_s(n, lambda: [
        record_by_record.extend(frame_rows("AVRO", b.to_pylist(), names, [f.type for f in fields], False, 1, text))
        for b in batches])
    results["encode_by_column_rows_per_s"] = rows_per_s(n, lambda: [
        by_column.extend(avro_columns.encode([b.field(i) for i in range(len(names))], types_, header, False)
                         .to_pylist()) for b in batches])
    assert by_column == record_by_record  # the same bytes

    keys = pa.array([r["key"] for r in make_records(n)], pa.binary())
    values = pa.array(record_by_record, pa.binary())
    to_write = [pa.RecordBatch.from_arrays([keys.slice(i, BATCH), values.slice(i, BATCH)], ["key", "value"])
                for i in range(0, n, BATCH)]
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        for case, conf in (("produce_report_each", {"delivery.report.only.error": False}),
                           ("produce_report_errors", {})):
            topic = f"bench-stages-{case}-{os.getpid()}"
            produce(bootstrap, topic, [], create_partitions=args.partitions)
            options = writer.SinkOptions(bootstrap, topic, kafka_conf=conf)
            results[f"{case}_rows_per_s"] = rows_per_s(n, lambda: writer.produce_batches(options, iter(to_write)))
        if args.spark:
            results.update(spark_stages(bootstrap, n, args.partitions, fields, text))
    results["cores"] = os.cpu_count()
    results["load_average_1m"] = round(os.getloadavg()[0], 1)
    results["machine"] = machine_facts()
    results["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(results, indent=1))
    write_report(args.out, results, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
