"""CPU cost of the reader's worker per record, with and without decoding in it.

    python bench/worker_decode_cpu.py [--records 100000] [--out bench/results/worker-decode-cpu.json]

Runs the reader's own `read_range` (what each Spark task runs) in this process over one
partition of the embedded broker and counts CPU time (`time.process_time`), not wall time:
the figure holds on a shared machine where rows/s do not. Cases: raw records only; AVRO key +
value decoded in the worker, read column by column (formats/avro_vector.py) and by fastavro
record by record (the column reader switched off: what the planner's UDF runs, without the
UDF's own Arrow round trip through the JVM); JSON key + value decoded in the worker.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

KEY = {"type": "record", "name": "BenchKey", "fields": [{"name": "k", "type": "long"}]}
VALUE = {"type": "record", "name": "BenchValue", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "ts", "type": "long"}, {"name": "tags", "type": "string"}]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench/results/worker-decode-cpu.json"))
    args = parser.parse_args()

    import fastavro

    from ingest import machine_facts, make_records
    from kafkasql_magic.formats import avro_decode, avro_vector
    from kafkasql_magic.formats.avro_decode import Layout
    from kafkasql_magic.kafka.arrow_batch import KafkaRange, read_range
    from kafkasql_magic.kafka.worker_decoding import WorkerDecoding
    from kafkasql_magic.local import LocalStack, produce
    from kafkasql_magic.sql import ast

    n = args.records
    schemas = {"key": fastavro.parse_schema(KEY), "value": fastavro.parse_schema(VALUE)}

    def framed(role, record):
        out = io.BytesIO()
        out.write(b"\x00\x00\x00\x00\x01")
        fastavro.schemaless_writer(out, schemas[role], record)
        return out.getvalue()

    avro = WorkerDecoding(
        avro_key=Layout((("K", ast.Type("BIGINT")),), True, None, json.dumps(KEY)),
        avro_value=Layout(tuple((n_, ast.Type(t)) for n_, t in (("ID", "BIGINT"), ("NAME", "STRING"),
                                                                 ("AMOUNT", "DOUBLE"))), False, None,
                          json.dumps(VALUE)))
    as_json = WorkerDecoding(json_key=(("K", "BIGINT"),),
                             json_value=(("ID", "BIGINT"), ("NAME", "STRING"), ("AMOUNT", "DOUBLE")))
    with LocalStack() as stack:
        b = stack.bootstrap_servers
        records = list(make_records(n))
        produce(b, "cpu-avro", ({"key": framed("key", {"k": i}), "value": framed("value", json.loads(r["value"])),
                                 "partition": 0} for i, r in enumerate(records)), create_partitions=1)
        produce(b, "cpu-json", ({"key": json.dumps({"k": i}), "value": r["value"], "partition": 0}
                                for i, r in enumerate(records)), create_partitions=1)

        def cpu(topic, decoding):
            rng = KafkaRange(topic, 0, 0, n, b, include_headers=False, decoding=decoding)
            start = time.process_time()
            rows = sum(batch.num_rows for batch in read_range(rng))
            assert rows == n, rows
            return (time.process_time() - start) / n * 1e6

        def fastavro_only():
            saved = avro_vector.layout
            avro_vector.layout = lambda record: None
            avro_decode._readers.clear()
            try:
                return cpu("cpu-avro", avro)
            finally:
                avro_vector.layout = saved
                avro_decode._readers.clear()

        cases = {"raw_records": lambda: cpu("cpu-avro", None),
                 "avro_key_value_by_columns": lambda: cpu("cpu-avro", avro),
                 "avro_key_value_by_fastavro": fastavro_only,
                 "json_key_value": lambda: cpu("cpu-json", as_json)}
        cases["raw_records"]()  # warm-up: imports, first connections
        load_before = os.getloadavg()[0]
        rounds: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, run in cases.items():
                rounds.setdefault(name, []).append(run())
        load_after = os.getloadavg()[0]
    medians = {name: statistics.median(v) for name, v in rounds.items()}
    results = {"cores": os.cpu_count(), "records": n, "unit": "CPU microseconds per record in the reader's worker",
               "cpu_us_per_record": {k: round(v, 3) for k, v in medians.items()},
               "decode_only_us_per_record": {k: round(v - medians["raw_records"], 3) for k, v in medians.items()
                                             if k != "raw_records"},
               "rounds": {k: [round(x, 3) for x in v] for k, v in rounds.items()},
               "load_average_1min": [round(load_before, 2), round(load_after, 2)],
               "machine": machine_facts(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, value in medians.items():
        print(f"{name:>28}: {value:6.3f} CPU-us per record")
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
