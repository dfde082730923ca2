"""Schema Registry decode benchmark: AVRO (Arrow UDF + fastavro) and JSON_SR (native Spark).

    python bench/decode_sr.py [--records N] [--partitions 4] [--out bench/results/decode_sr.json]

`avro_decode_case(spark, bootstrap, registry_url, records)` produces `records` Confluent-framed
Avro values (~100 B, the ingest benchmark's fields: id, name, amount, ts, tags, pad) into a
fresh topic and returns rows/s of a bounded `kafkasql` read decoded through the real planner
(`planner.logical_frame`, so key + value decoding and the error column), aggregated so every
decoded column is evaluated. Warm-up excluded (Python workers started, schema cached).
`json_sr_decode_case` is the same for JSON_SR. The standalone run adds the same-machine
baselines: raw confluent-kafka consume (a), the plain source count (b) and the source with the
key and value bytes materialised but not decoded (`source_bytes`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VALUE_AVRO = {"type": "record", "name": "BenchValue", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tags", "type": "string"}, {"name": "pad", "type": "string"}]}
VALUE_JSON = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "amount": {"type": "number"},
    "ts": {"type": "integer"}, "tags": {"type": "string"}, "pad": {"type": "string"}}}
COLUMNS = "(K STRING KEY, ID BIGINT, NAME STRING, AMOUNT DOUBLE, TS TIMESTAMP, TAGS STRING, PAD STRING)"
PARTITIONS = 4
WARMUP = 50_000  # JVM JIT, Python workers, schema caches


def _values(n: int):
    for i in range(n):
        yield {"id": i, "name": f"user-{i}", "amount": 12.5 + (i % 100), "ts": 1700000000000 + i,
               "tags": "a,b", "pad": "x" * 40}


def _produce(bootstrap, registry_url, topic, n, kind, partitions=PARTITIONS) -> int:
    """Serialize with confluent-kafka's own serializer once, then produce framed bytes; returns value size."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kafkasql_magic.local import produce

    client = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if kind == "AVRO":
        import datetime as dt

        from confluent_kafka.schema_registry.avro import AvroSerializer

        ser = AvroSerializer(client, json.dumps(VALUE_AVRO))
        utc = dt.timezone.utc
        convert = lambda v: {**v, "ts": dt.datetime.fromtimestamp(v["ts"] / 1000, utc)}  # noqa: E731
    else:
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        ser = JSONSerializer(json.dumps(VALUE_JSON), client)
        convert = lambda v: v  # noqa: E731
    records = ({"key": str(v["id"]).encode(), "value": ser(convert(v), ctx)} for v in _values(n))
    first = ser(convert(next(_values(1))), ctx)
    produce(bootstrap, topic, records, create_partitions=partitions)
    return len(first)


def _decode_case(spark, bootstrap, registry_url, records: int, kind: str, repeat: int = 3) -> float:
    from pyspark.sql import functions as F

    from kafkasql_magic import ddl
    from kafkasql_magic.planner import logical_frame
    from kafkasql_magic.sparkenv import prepare
    from kafkasql_magic.sql import parse_statement

    prepare(spark)
    topic = f"bench-{kind.lower()}-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, registry_url, topic, records, kind)
    warm = topic + "-warmup"
    _produce(bootstrap, registry_url, warm, WARMUP, kind)

    def run(t: str, expected: int):
        create = parse_statement(f"CREATE STREAM s {COLUMNS} WITH (kafka_topic='{t}', "
                                 f"key_format='KAFKA', value_format='{kind}');")
        source = ddl.source_from_create(create, {ddl.SCHEMA_REGISTRY_URL: registry_url})
        raw = spark.read.format("kafkasql").options(**{"bootstrap.servers": bootstrap, "topic": t}).load()
        frame = logical_frame(raw, source)
        row = frame.agg(F.count("ID").alias("c"), F.count("__ERROR").alias("e"), F.sum("AMOUNT"),
                        F.max("TS"), F.max(F.length("NAME")), F.max(F.length("TAGS")),
                        F.max(F.length("PAD")), F.max(F.length("K"))).collect()[0]
        assert row["c"] == expected and row["e"] == 0, row
        return row

    run(warm, WARMUP)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(topic, records)
        elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    return records / best


def avro_decode_case(spark, bootstrap, registry_url, records: int) -> float:
    """Rows/s of reading `records` AVRO values through the planner's decoding (best of 3)."""
    return _decode_case(spark, bootstrap, registry_url, records, "AVRO")


def json_sr_decode_case(spark, bootstrap, registry_url, records: int) -> float:
    """Rows/s of reading `records` JSON_SR values through the planner's decoding (best of 3)."""
    return _decode_case(spark, bootstrap, registry_url, records, "JSON_SR")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "decode_sr.json"))
    args = ap.parse_args(argv)

    from bench.ingest import machine_facts, raw_consume, spark_session
    from kafkasql_magic.local import LocalStack
    from kafkasql_magic.registry import RegistryServer

    n = args.records
    cores = os.cpu_count() or 1
    rates = {}
    with LocalStack() as stack, RegistryServer(stack.bootstrap_servers) as registry:
        bootstrap = stack.bootstrap_servers
        spark = spark_session(cores)
        rates["avro_decode"] = avro_decode_case(spark, bootstrap, registry.url, n)
        rates["json_sr_decode"] = json_sr_decode_case(spark, bootstrap, registry.url, n)
        # baselines on an AVRO topic of the same records
        topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
        size = _produce(bootstrap, registry.url, topic, n, "AVRO")
        rates["raw_consume"] = max(raw_consume(bootstrap, topic, PARTITIONS, n) for _ in range(3))
        src = spark.read.format("kafkasql").options(**{"bootstrap.servers": bootstrap, "topic": topic})
        best = min(_timed(lambda: src.load().count()) for _ in range(3))
        rates["source_count"] = n / best
        from pyspark.sql import functions as F

        def raw_bytes():  # the source with key and value bytes materialised, no decoding
            row = src.load().agg(F.count("value").alias("c"), F.sum(F.length("value")), F.max(F.length("key"))).collect()[0]
            assert row["c"] == n, row
        rates["source_bytes"] = n / min(_timed(raw_bytes) for _ in range(3))
        spark.stop()
    a = rates["raw_consume"]
    results = {
        "cores": cores, "records": n, "partitions": PARTITIONS, "avro_value_bytes": size,
        "rows_per_s": {k: round(v) for k, v in rates.items()},
        "avro_vs_raw": round(rates["avro_decode"] / a, 3), "json_sr_vs_raw": round(rates["json_sr_decode"] / a, 3),
        "avro_vs_source_bytes": round(rates["avro_decode"] / rates["source_bytes"], 3),
        "machine": machine_facts(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for name, rate in rates.items():
        print(f"{name:>16}: {rate:>12,.0f} rows/s  ({rate / a:.2f} x raw_consume)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
