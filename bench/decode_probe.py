"""What decoding JSON values in the reader's Python worker would cost: CPU per record of
candidate parsers over one reader batch (20,000 of the ingest bench's ~100-byte values).

    python bench/decode_probe.py [--records N] [--repeat 5] [--out bench/results/decode_probe.json]

No broker, no Spark: the figure to set against Spark's decode stage in `bench/scaling.py`
(`decode` and `projection`, CPU-seconds per million records) before moving decoding into the
worker. Candidates: pyarrow's C++ JSON reader over the batch joined by newlines (explicit
schema, and inferred), and `json.loads` per record (the per-record Python a worker must avoid).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None) -> int:
    import pyarrow as pa
    import pyarrow.json as pj

    from ingest import make_records, machine_facts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "decode_probe.json"))
    args = ap.parse_args(argv)
    n = args.records
    values = [r["value"] for r in make_records(n)]
    batches = [values[i:i + 20_000] for i in range(0, n, 20_000)]
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
                        ("ts", pa.int64()), ("tags", pa.string())])
    read = pj.ReadOptions(use_threads=False, block_size=1 << 24)
    explicit = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")

    def arrow_json(batch, parse=None):
        table = pj.read_json(pa.py_buffer(b"\n".join(batch)), read_options=read,
                             parse_options=parse or pj.ParseOptions())
        assert table.num_rows == len(batch)

    cases = {
        "binary_column_only": lambda b: pa.array(b, pa.binary()),
        "pyarrow_json_explicit_schema": lambda b: arrow_json(b, explicit),
        "pyarrow_json_inferred": arrow_json,
        "json_loads_per_record": lambda b: [json.loads(v) for v in b],
    }
    rounds: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeat):
        for name, run in cases.items():
            t0 = time.process_time()
            for batch in batches:
                run(batch)
            rounds[name].append(time.process_time() - t0)
    results = {
        "records": n, "rounds": args.repeat,
        "cpu_s_per_million_records": {k: round(statistics.median(v) * 1_000_000 / n, 2) for k, v in rounds.items()},
        "machine": machine_facts(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(results["cpu_s_per_million_records"], indent=2))
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
