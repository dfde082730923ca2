"""Planning benchmark: how long the largest statements the parser accepts take to plan, and
whether that time grows linearly with the statement's size.

    python bench/planning.py [--out bench/results/planning.json] [--no-spark]

For each shape (an IN list, a searched CASE, nested parentheses, a chain of `+`), sizes
double up to the parser's limit (10,000 IN values, 1,000 WHEN branches, 150 levels of
nesting) and each step is timed: parse (text -> AST), analyse (AST -> plan, with the type
checker) and build (plan -> Spark DataFrame, resolved by Spark's analyser: `frame.schema`),
over an empty frame of raw records (nothing is read). The best of `--repeat` runs counts. The
report gives each step's seconds per size and, between the two largest sizes, the ratio of
the time ratio to the size ratio: about 1 for linear growth, about 2 for quadratic.

Beside the shapes, the build of a plain query over a source whose records the reader's worker
decodes (JSON value; JSON key + value): the first build over the source, which makes its
decoding expressions (engine.decode.rows_spark's recipes), and a build after it, which reuses them;
seconds (best of `--repeat`) and py4j calls, each a round trip to Spark's JVM.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import machine_facts  # noqa: E402

from kafkasql_magic.catalog import Catalog  # noqa: E402
from kafkasql_magic.dialects import ksql_sources  # noqa: E402
from kafkasql_magic.engine.analysis import analyse  # noqa: E402
from kafkasql_magic.sql import parse_statement  # noqa: E402
from kafkasql_magic.sql.parser import MAX_ITEMS, MAX_NESTING  # noqa: E402

CREATE = "CREATE STREAM s (id INT KEY, n INT, v STRING) WITH (kafka_topic='s', value_format='JSON');"

#: shape -> (largest size the parser accepts, statement of that size)
SHAPES = {
    "in_list": (MAX_ITEMS["in_list"][0],
                lambda n: "SELECT id FROM s WHERE n IN (" + ", ".join(map(str, range(n))) + ") EMIT CHANGES;"),
    "case": (MAX_ITEMS["searched_case"][0],
             lambda n: "SELECT CASE " + " ".join(f"WHEN n = {i} THEN 'v{i}'" for i in range(n))
             + " ELSE 'z' END AS c FROM s EMIT CHANGES;"),
    "nesting": (MAX_NESTING - 10, lambda n: "SELECT " + "(" * n + "n" + ")" * n + " AS x FROM s EMIT CHANGES;"),
    "plus_chain": (MAX_NESTING - 10, lambda n: "SELECT " + " + ".join(["n"] * n) + " AS x FROM s EMIT CHANGES;"),
}


def sizes(largest: int, steps: int = 4) -> list[int]:
    return [max(1, largest >> (steps - 1 - i)) for i in range(steps)]


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def run(repeat: int, spark=None) -> dict:
    catalog = Catalog()
    catalog.add(ksql_sources.source_from_create(parse_statement(CREATE), {ksql_sources.DEFAULT_KEY_FORMAT: "KAFKA"}))
    raw = None
    if spark is not None:
        from kafkasql_magic.kafka.source import SCHEMA

        raw = spark.createDataFrame([], SCHEMA)
    report = {}
    for shape, (largest, make) in SHAPES.items():
        rows = []
        for n in sizes(largest):
            text = make(n)
            parse_s, stmt = best(lambda: parse_statement(text), repeat)
            analyse_s, plan = best(lambda: analyse(stmt, catalog), repeat)
            row = {"size": n, "chars": len(text), "parse_s": round(parse_s, 4), "analyse_s": round(analyse_s, 4)}
            if raw is not None:
                from kafkasql_magic.engine.build.query_spark import build

                build_s, _ = best(lambda: build(plan, raw, lambda *a: raw).frame.schema, repeat)
                row["build_s"] = round(build_s, 4)
            rows.append(row)
            print(shape, row, flush=True)
        first, last = rows[-2], rows[-1]  # the two largest: small sizes are all noise
        growth = {step: round((last[step] / max(first[step], 1e-6)) / (last["size"] / first["size"]), 2)
                  for step in ("parse_s", "analyse_s", "build_s") if step in last}
        report[shape] = {"rows": rows, "time_ratio_over_size_ratio": growth}
    return report


#: source -> (CREATE, the query built over it)
DECODED_SOURCES = {
    "json_value": ("CREATE STREAM j (id BIGINT, name STRING, amount DOUBLE, ts BIGINT, tags STRING) "
                   "WITH (kafka_topic='j', value_format='JSON');", "SELECT id, name, amount, ts, tags FROM j EMIT CHANGES;"),
    "json_key_value": ("CREATE STREAM kv (k STRUCT<k BIGINT> KEY, id BIGINT, name STRING, amount DOUBLE) "
                       "WITH (kafka_topic='kv', format='JSON');", "SELECT k, id, name, amount FROM kv EMIT CHANGES;"),
}


class _Py4jCalls:
    """Counts the driver's py4j round trips while on."""

    def __init__(self):
        from py4j.clientserver import ClientServerConnection

        self.count, self._cls, self._send = 0, ClientServerConnection, ClientServerConnection.send_command

    def __enter__(self):
        def counted(connection, command):
            self.count += 1
            return self._send(connection, command)

        self._cls.send_command = counted
        return self

    def __exit__(self, *exc):
        self._cls.send_command = self._send


def decoded_source_builds(repeat: int, spark) -> dict:
    from pyspark.sql.types import StructType

    from kafkasql_magic.engine.decode import rows_spark as decode
    from kafkasql_magic.engine.build.query_spark import build
    from kafkasql_magic.kafka.source import SCHEMA

    report = {}
    for name, (create, query) in DECODED_SOURCES.items():
        catalog = Catalog()
        source = ksql_sources.source_from_create(parse_statement(create), {ksql_sources.DEFAULT_KEY_FORMAT: "KAFKA"})
        catalog.add(source)
        raw = spark.createDataFrame([], StructType(SCHEMA.fields + decode.worker_decoding(source).spark_fields()))
        plan = analyse(parse_statement(query), catalog)

        def built(first: bool) -> int:
            if first:
                decode._RECIPES = decode._Recipes(decode._recipe)  # none kept: the source's first query
            with _Py4jCalls() as calls:
                build(plan, raw, lambda *a: raw).frame.schema
            return calls.count

        built(False)  # Spark's own first-use costs
        first_s, first_calls = best(lambda: built(True), repeat)
        kept_s, kept_calls = best(lambda: built(False), repeat)
        report[name] = {"first_build_s": round(first_s, 4), "first_build_py4j_calls": first_calls,
                        "later_build_s": round(kept_s, 4), "later_build_py4j_calls": kept_calls}
        print(name, report[name], flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "planning.json"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-spark", action="store_true", help="parse and analyse only")
    args = parser.parse_args()
    spark = None
    if not args.no_spark:
        from ingest import spark_session

        from kafkasql_magic import sparkenv

        spark = sparkenv.prepare(spark_session(2))  # with the SQL settings ksql semantics need
    report = {"machine": machine_facts(), "shapes": run(args.repeat, spark)}
    if spark is not None:
        report["decoded_source_builds"] = decoded_source_builds(args.repeat, spark)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
