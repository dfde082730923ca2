"""What a record costs to cross into a keyed Python step and back, per API of `transformWithState`.

    python bench/row_conversion.py [--rows 50000] [--repeat 5] [--out bench/results/row-conversion.json]

No Spark: the conversions themselves, on an Arrow batch shaped like the input of the TUMBLING
aggregation's steps (group key, argument, partition, offset, topic, record time, headers, time,
watermark). `row_api_in` is what PySpark's Row-based `transformWithState` does to each input record
(`pyspark/worker.py`: one `as_py()` per column and row, then a `Row`), `row_api_out` what it does to
each output row (`Row.asDict(True)`, then `RecordBatch.from_pylist`); `packed_in` the same input
with the pass-through columns packed into one struct column; `pandas_round_trip` the batch to
pandas and back; `pandas_step` what PySpark 4.3's `transformWithStateInPandas` does around it
(each row through `itertuples`, the rows of each grouping key, here the partition, made a
DataFrame again, the step's output back to Arrow), and `pandas_step_exact` the same with the
BIGINT and TIMESTAMP columns travelling as DECIMAL(20, 0) (`engine/pandas_step`);
`to_pylist` Arrow's own rows. `join_row_api` and `join_pandas_step`: the same two paths (in and
out) for a batch shaped like a stream-stream join's side step (side, join key, time, partition,
offset, each side's columns as a struct).
Microseconds per row, the median of the rounds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]


def batch(n: int) -> pa.RecordBatch:
    when = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    headers = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    return pa.RecordBatch.from_pydict({
        "customer": pa.array([f"c{i % 1000}" for i in range(n)]), "qty": pa.array([i % 5 for i in range(n)], pa.int32()),
        "partition": pa.array([i % 4 for i in range(n)], pa.int32()), "offset": pa.array(range(n), pa.int64()),
        "topic": pa.array(["orders"] * n), "rt": pa.array([when] * n, pa.timestamp("us", tz="UTC")),
        "rh": pa.array([[]] * n, headers), "t": pa.array(range(n), pa.int64()),
        "wm": pa.array([when] * n, pa.timestamp("us", tz="UTC"))})


def join_batch(n: int) -> pa.RecordBatch:
    row = pa.struct([("ID", pa.int64()), ("NAME", pa.string()), ("V", pa.int64()), ("ROWTIME", pa.int64()),
                     ("ROWPARTITION", pa.int32()), ("ROWOFFSET", pa.int64())])
    sides = [{"ID": i, "NAME": f"n{i}", "V": i, "ROWTIME": i, "ROWPARTITION": 0, "ROWOFFSET": i} for i in range(n)]
    return pa.RecordBatch.from_pydict({
        "side": pa.array([i % 2 for i in range(n)], pa.int32()), "jk": pa.array([i % 1000 for i in range(n)], pa.int64()),
        "t": pa.array(range(n), pa.int64()), "partition": pa.array([i % 4 for i in range(n)], pa.int32()),
        "o": pa.array(range(n), pa.int64()),
        "l": pa.array([v if i % 2 == 0 else None for i, v in enumerate(sides)], row),
        "r": pa.array([v if i % 2 else None for i, v in enumerate(sides)], row)})


def row_api_in(data: pa.RecordBatch) -> list:
    from pyspark.sql import Row

    make = Row(*data.schema.names)
    return [make(*(data.column(i)[r].as_py() for i in range(data.num_columns))) for r in range(data.num_rows)]


def row_api_out(rows: list, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([row.asDict(True) for row in rows], schema=schema)


def packed(data: pa.RecordBatch) -> pa.RecordBatch:
    kept = ("partition", "offset", "t", "wm")
    rest = [name for name in data.schema.names if name not in kept]
    return pa.RecordBatch.from_arrays([data.column(n) for n in kept] + [pa.StructArray.from_arrays(
        [data.column(n) for n in rest], names=rest)], names=[*kept, "pass"])


def pandas_step(data: pa.RecordBatch) -> list:
    """PySpark 4.3's pandas keyed step around a pass-through handler (`worker.py`,
    SQL_TRANSFORM_WITH_STATE_PANDAS_UDF), grouped by the partition column."""
    import itertools

    import pandas as pd

    frame = pd.concat([column.to_pandas() for column in data.columns], axis=1, keys=data.schema.names)
    key = data.schema.names.index("partition")
    keyed = ((row[key], row) for row in frame.sort_values("partition", kind="stable").itertuples(index=False))
    return [pa.RecordBatch.from_pandas(pd.DataFrame([row for _, row in rows]), schema=data.schema)
            for _, rows in itertools.groupby(keyed, key=lambda pair: pair[0])]


def travelling(data: pa.RecordBatch) -> pa.RecordBatch:
    """The batch as `engine/pandas_step` hands it to pandas: BIGINT and TIMESTAMP as DECIMAL(20, 0)."""
    import pyarrow.compute as pc

    travel = pa.decimal128(20, 0)
    columns = [pc.cast(pc.cast(c, pa.int64()), travel) if pa.types.is_int64(c.type) or pa.types.is_timestamp(c.type)
               else c for c in data.columns]
    return pa.RecordBatch.from_arrays(columns, names=data.schema.names)


def timed(fn, rows: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) / rows * 1e6)
    return round(statistics.median(times), 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "row-conversion.json"))
    args = ap.parse_args(argv)
    data, n = batch(args.rows), args.rows
    rows, packed_data, exact, join = row_api_in(data), packed(data), travelling(data), join_batch(n)
    report = {"rows": n, "columns": data.num_columns, "cpu_count": os.cpu_count(),
              "load_average_start": list(os.getloadavg()), "pyarrow": pa.__version__, "us_per_row": {
                  "row_api_in": timed(lambda: row_api_in(data), n, args.repeat),
                  "row_api_out": timed(lambda: row_api_out(rows, data.schema), n, args.repeat),
                  "packed_in": timed(lambda: row_api_in(packed_data), n, args.repeat),
                  "pandas_round_trip": timed(lambda: pa.RecordBatch.from_pandas(data.to_pandas(), schema=data.schema),
                                             n, args.repeat),
                  "pandas_step": timed(lambda: pandas_step(data), n, args.repeat),
                  "pandas_step_exact": timed(lambda: pandas_step(exact), n, args.repeat),
                  "to_pylist": timed(data.to_pylist, n, args.repeat),
                  "join_row_api": timed(lambda: row_api_out(row_api_in(join), join.schema), n, args.repeat),
                  "join_pandas_step": timed(lambda: pandas_step(join), n, args.repeat)}}
    print(json.dumps(report, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
