"""Replay ksqlDB's query-validation tests as a ksqlDB user would, and count the answers that match.

    python tests/conformance/replay_ksqldb.py DIR [FILE.json ...] [--only NAME] [--refusals] [--out report.json]

DIR holds ksqlDB's test files (`ksqldb-functional-tests/src/test/resources/query-validation-tests/`
of the confluentinc/ksql repository; they are not shipped here). Each case runs on a broker of
its own (the embedded one) through `Session.sql`, statement by statement, as written:
- its input records are produced with their own timestamps (0 when none is given, as ksqlDB's
  test runner does), keys, values and headers, encoded in the format the input's source declares;
- every persistent query runs until the records the case expects reached its sink topics (or a
  quiet period passed), then the sink topics are read back record by record and compared with
  the expected ones: key, value, window, and the timestamp and headers where the case gives them;
- a case that expects an exception passes when a statement fails with a message that contains
  ksqlDB's (as ksqlDB's runner matches it).
Formats: a case run in several formats runs once, in JSON if it may; keys and values in KAFKA,
JSON, DELIMITED and NONE are encoded and decoded here. A case needing another format, or input
records with windows, is reported as not run, with why.

Input records are produced with kafka-python (`pip install kafka-python`): librdkafka replaces a
timestamp of 0 with the clock, and ksqlDB's cases start at 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import struct
import sys
import time
import traceback
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: The formats this replay encodes and decodes itself.
FORMATS = ("JSON", "KAFKA", "DELIMITED", "NONE")
WAIT_S = 60.0  # the longest wait for a case's records
QUIET_S = 3.0  # no new sink record for this long: the case's queries are done


class NotRun(Exception):
    """A case this replay cannot run as written (a format it does not encode, windowed inputs)."""


def spark_session():
    os.environ.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                       "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    from pyspark.sql import SparkSession

    from kafkasql_magic.sparkenv import prepare

    spark = (SparkSession.builder.master("local[2]").appName("ksqldb-replay")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"]).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    prepare(spark)
    return spark


# ---------------------------------------------------------------- the case as written
def cases(path: Path, only: str | None, refusals: bool = False):
    for case in json.loads(path.read_text())["tests"]:
        if case.get("enabled") is False or (only and only not in case["name"]):
            continue
        if refusals and "expectedException" not in case:
            continue
        formats = case.get("format")
        if formats:
            chosen = "JSON" if "JSON" in formats else formats[0]
            case = json.loads(json.dumps(case).replace("{FORMAT}", chosen))
            case["name"] = f"{case['name']} - {chosen}"
        yield case


def declared_topics(statements: list[str]) -> dict[str, int]:
    """Topics the case's CREATE statements name (not AS SELECT): made before it runs, with the
    PARTITIONS the statement gives (ksqlDB's runner makes them; here CREATE refuses a missing one)."""
    topics = {}
    for text in statements:
        if re.search(r"\bAS\s+SELECT\b", text, re.IGNORECASE):
            continue
        topic = re.search(r"kafka_topic\s*=\s*'([^']*)'", text, re.IGNORECASE)
        if topic:
            parts = re.search(r"\bpartitions\s*=\s*(\d+)", text, re.IGNORECASE)
            topics[topic.group(1)] = int(parts.group(1)) if parts else 1
    return topics


# ---------------------------------------------------------------- bytes
def encode(role: str, given, source):
    """The bytes of a key or value as ksqlDB's runner serializes `given` for `source`'s format."""
    spec = source.key_format if role == "key" else source.value_format
    columns = source.key_columns if role == "key" else source.value_columns
    if given is None:
        return None
    name = spec.name
    if name == "NONE":
        return None
    if name == "JSON":
        return json.dumps(given).encode()
    if name == "DELIMITED":
        return str(given).encode()
    if name == "KAFKA":
        if len(columns) != 1:
            raise NotRun(f"KAFKA {role} of {len(columns)} columns")
        kind = columns[0].type.name
        if kind == "INT":
            return struct.pack(">i", int(given))
        if kind == "BIGINT":
            return struct.pack(">q", int(given))
        if kind == "DOUBLE":
            return struct.pack(">d", float(given))
        if kind == "STRING":
            return str(given).encode()
        if kind == "BYTES":
            return base64.b64decode(given)
        raise NotRun(f"KAFKA {role} of type {kind}")
    raise NotRun(f"{role} format {name}")


def decode(role: str, raw: bytes | None, source):
    """A written key or value in the form ksqlDB's cases give it."""
    if raw is None:
        return None
    spec = source.key_format if role == "key" else source.value_format
    columns = source.key_columns if role == "key" else source.value_columns
    name = spec.name
    if name == "JSON":
        return json.loads(raw, parse_float=Decimal)  # a DECIMAL's scale is in its text (3.40)
    if name == "DELIMITED":
        return raw.decode()
    if name == "KAFKA":
        kind = columns[0].type.name if len(columns) == 1 else "?"
        if kind == "INT":
            return struct.unpack(">i", raw)[0]
        if kind == "BIGINT":
            return struct.unpack(">q", raw)[0]
        if kind == "DOUBLE":
            return struct.unpack(">d", raw)[0]
        if kind == "STRING":
            return raw.decode()
        if kind == "BYTES":
            return base64.b64encode(raw).decode()
        return raw.hex()
    if name == "NONE":
        return None
    raise NotRun(f"{role} format {name} of the sink")


def split_window(raw: bytes | None, kind: str | None):
    """A windowed key's inner key and window bounds (Kafka Streams' serialization)."""
    if raw is None or kind is None:
        return raw, None
    if kind == "SESSION":
        inner, end, start = raw[:-16], raw[-16:-8], raw[-8:]
        return inner, {"start": int.from_bytes(start, "big"), "end": int.from_bytes(end, "big"), "type": "session"}
    return raw[:-8], {"start": int.from_bytes(raw[-8:], "big"), "type": "time"}


def same(expected, got) -> bool:
    """ksqlDB's runner compares JSON values: numbers by value (a DECIMAL as its text, scale and
    all), objects member by member."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected == got
    if isinstance(expected, str) and isinstance(got, Decimal):  # ksqlDB's cases spell a DECIMAL "3.40"
        return expected == str(got)
    if isinstance(expected, (int, float, Decimal)) and isinstance(got, (int, float, Decimal)):
        return abs(float(expected) - float(got)) <= 1e-9 * max(1.0, abs(float(expected)))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(same(expected[k], got[k]) for k in expected)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(same(a, b) for a, b in zip(expected, got))
    return expected == got


# ---------------------------------------------------------------- one case
def run_case(case: dict, spark, workdir: Path) -> tuple[str, str]:
    """("pass" | "fail" | "error" | "not run", what differed)."""
    import kafkasql_magic as ks
    from kafkasql_magic.errors import KStreamError
    from kafkasql_magic.kafka.admin import create_topic
    from kafkasql_magic.kafka.peek import fetch_records
    from kafkasql_magic.local.stack import LocalStack

    if any("window" in r for r in case.get("inputs", [])):
        return "not run", "input records with windows"
    expected_error = case.get("expectedException")
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        for topic, partitions in {**declared_topics(case["statements"]),
                                  **{t["name"]: t.get("partitions", 1) for t in case.get("topics", [])}}.items():
            create_topic(bootstrap, topic, partitions)
        session = ks.connect(bootstrap_servers=bootstrap, schema_registry_url=stack.endpoints["schema.registry.url"],
                             spark=spark, timeout=60, state_dir=str(workdir))
        try:
            session.sql("SET 'auto.offset.reset'='earliest';")
            # ksqlDB's test runner turns the record cache off: an aggregation writes every change
            session.sql("SET 'cache.max.bytes.buffering'='0';")
            for key, value in (case.get("properties") or {}).items():
                try:
                    session.sql(f"SET '{key}'='{value}';")
                except KStreamError:
                    pass
            try:  # one text, a statement per line, as ksqlDB's runner sends them: messages say "Line: 3"
                session.sql("\n".join(case["statements"]))
            except KStreamError as exc:
                if expected_error is None:
                    return "fail", f"refused: {exc}"
                wanted = expected_error.get("message", "")
                if wanted in str(exc):
                    return "pass", ""
                return "fail", f"refused with another message: {exc!s} (ksqlDB: {wanted})"
            if expected_error is not None:
                return "fail", f"accepted; ksqlDB refuses it: {expected_error.get('message', '')}"
            produce_inputs(case, session, bootstrap)
            by_topic = {}
            for record in case.get("outputs", []):
                by_topic.setdefault(record["topic"], []).append(record)
            got = wait_outputs(session, bootstrap, by_topic, fetch_records)
            status, why = compare(session, by_topic, got)
            failed = [f"{q.id}: {q.failure}" for q in session.persistent.queries.values() if q.failure is not None]
            return status, why + ("" if not failed else "; query failed: " + "; ".join(failed))
        finally:
            session.stop()


def source_of(session, topic: str):
    for source in session.catalog:
        if getattr(source, "topic", None) == topic:
            return source
    raise NotRun(f"no source reads topic {topic}")


def produce_inputs(case: dict, session, bootstrap: str) -> None:
    """In order, each record acknowledged before the next: with kafka-python when its timestamp
    is 0, else (a header without a value, which kafka-python cannot send) with confluent-kafka."""
    from confluent_kafka import Producer
    from kafka import KafkaProducer

    zero = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks="all")
    other = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    try:
        for record in case.get("inputs", []):
            source = source_of(session, record["topic"])
            headers = [(h["KEY"], None if h.get("VALUE") is None else base64.b64decode(h["VALUE"]))
                       for h in record.get("headers", [])]
            stamp = int(record.get("timestamp", 0))
            key, value = encode("key", record.get("key"), source), encode("value", record.get("value"), source)
            if stamp == 0 and key is None and value is None:  # kafka-python cannot send it: the clock's time
                other.produce(record["topic"], None, None, partition=record.get("partition", 0), headers=headers)
                other.flush(30)
            elif stamp == 0:
                if any(v is None for _, v in headers):
                    raise NotRun("a record at time 0 with a header without a value")
                zero.send(record["topic"], key=key, value=value, timestamp_ms=0, headers=headers,
                          partition=record.get("partition", 0)).get(timeout=30)
            else:
                other.produce(record["topic"], value, key, partition=record.get("partition", 0), timestamp=stamp,
                              headers=headers)
                other.flush(30)
    finally:
        zero.close()


def wait_outputs(session, bootstrap: str, by_topic: dict, fetch_records) -> dict:
    """Each expected topic's records once they are all there and nothing new came for QUIET_S."""
    from kafkasql_magic.kafka.admin import topic_partitions

    deadline = time.monotonic() + WAIT_S
    got, last_change, counts = {}, time.monotonic(), None
    while time.monotonic() < deadline:
        got = {}
        for topic in by_topic:
            try:
                topic_partitions(bootstrap, topic)
            except Exception:
                got[topic] = []
                continue
            got[topic] = fetch_records(bootstrap, topic, from_beginning=True, limit=None, timeout_s=5)
        now = {t: len(r) for t, r in got.items()}
        if now != counts:
            counts, last_change = now, time.monotonic()
        enough = all(now[t] >= len(by_topic[t]) for t in by_topic)
        if enough and time.monotonic() - last_change >= QUIET_S:
            break
        if not by_topic and time.monotonic() - last_change >= QUIET_S:
            break
        time.sleep(0.5)
    return got


def compare(session, by_topic: dict, got: dict) -> tuple[str, str]:
    for topic, expected in by_topic.items():
        sink = source_of(session, topic)
        window = window_kind(sink)
        records = sorted(got.get(topic, []), key=lambda r: (r["partition"], r["offset"]))
        rows = []
        for r in records:
            inner, bounds = split_window(r["key"], window)
            rows.append({"key": decode("key", inner, sink), "value": decode("value", r["value"], sink),
                         "timestamp": r["timestamp"], "window": bounds, "headers": r["headers"]})
        for i, want in enumerate(expected):
            if i >= len(rows):
                return "fail", f"{topic}: {len(rows)} records, ksqlDB writes {len(expected)}; first missing: {want}"
            differs = record_difference(want, rows[i])
            if differs:
                written = "\n".join(f"      {r['key']!r} {r['value']!r} @{r['timestamp']}" for r in rows)
                return "fail", f"{topic} record {i}: {differs}\n    written:\n{written}"
        if len(rows) > len(expected):
            return "fail", f"{topic}: {len(rows)} records, ksqlDB writes {len(expected)}; first extra: {rows[len(expected)]}"
    return "pass", ""


def record_difference(want: dict, row: dict) -> str:
    if "key" in want and not same(want["key"], row["key"]):
        return f"key {row['key']!r}, ksqlDB {want['key']!r}"
    if not same(want.get("value"), row["value"]):
        return f"value {row['value']!r}, ksqlDB {want.get('value')!r}"
    if "timestamp" in want and want["timestamp"] != row["timestamp"]:
        return f"timestamp {row['timestamp']}, ksqlDB {want['timestamp']}"
    if "window" in want and row["window"] is not None:
        w = want["window"]
        if w["start"] != row["window"]["start"] or (row["window"]["type"] == "session" and w["end"] != row["window"]["end"]):
            return f"window {row['window']}, ksqlDB {w}"
    if "headers" in want:
        headers = [{"KEY": k, "VALUE": None if v is None else base64.b64encode(v).decode()} for k, v in row["headers"]]
        if headers != want["headers"]:
            return f"headers {headers}, ksqlDB {want['headers']}"
    return ""


def window_kind(source) -> str | None:
    """TUMBLING/HOPPING ("TIME") or SESSION when the sink's statement windows, else None."""
    text = source.statement or ""
    match = re.search(r"\bWINDOW\s+(TUMBLING|HOPPING|SESSION)\b", text, re.IGNORECASE)
    if match:
        return "SESSION" if match.group(1).upper() == "SESSION" else "TIME"
    kind = (source.properties or {}).get("WINDOW_TYPE")
    return None if kind is None else ("SESSION" if str(kind).upper() == "SESSION" else "TIME")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path)
    parser.add_argument("files", nargs="*")
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--out", type=Path, default=Path("ksqldb-replay.json"))
    parser.add_argument("--refusals", action="store_true", help="run only the cases where ksqlDB refuses a statement")
    args = parser.parse_args()
    files = [args.dir / f for f in args.files] if args.files else sorted(args.dir.glob("*.json"))
    spark = spark_session()
    report, workdir = {"cores": os.cpu_count(), "files": {}}, Path(os.environ.get("TMPDIR", "/tmp")) / "ksqldb-replay"
    for path in files:
        results = []
        for n, case in enumerate(cases(path, args.only, args.refusals)):
            started = time.monotonic()
            try:
                status, why = run_case(case, spark, workdir / f"{path.stem}-{n}")
            except NotRun as exc:
                status, why = "not run", str(exc)
            except Exception as exc:  # an internal failure: keep its traceback in the report
                status, why = "error", "".join(traceback.format_exception_only(exc)).strip() + "\n" + \
                    traceback.format_exc(limit=-3)
            results.append({"name": case["name"], "status": status, "why": why,
                            "seconds": round(time.monotonic() - started, 1)})
            print(f"{path.name}: {status:8} {case['name']}" + (f"\n    {why.splitlines()[0]}" if why else ""),
                  flush=True)
        counts = {s: sum(r["status"] == s for r in results) for s in ("pass", "fail", "error", "not run")}
        report["files"][path.name] = {"counts": counts, "cases": results}
        args.out.write_text(json.dumps(report, indent=1))
    total = {s: sum(f["counts"][s] for f in report["files"].values()) for s in ("pass", "fail", "error", "not run")}
    run = total["pass"] + total["fail"] + total["error"]
    print(f"{total['pass']} passed, {total['fail'] + total['error']} failed ({total['not run']} not run; "
          f"{total['pass'] / max(run, 1):.0%} of those run give ksqlDB's answer)")


if __name__ == "__main__":
    main()
