"""From a persistent query's statement to its first output record, cold and warm.

    python bench/first_output.py [--records 1000000] [--warm 2] [--out bench/results/first-output.json]

On the embedded broker, over bench/peers.py's `orders` (N JSON records, 4 partitions), peers job (a)
`CREATE STREAM ... AS SELECT customer, orderid, qty * price AS total FROM orders WHERE qty > 1` runs
first in a fresh Spark session (cold: the session's first query) and then `--warm` times again in
the same session, each to a topic of its own. Per run, seconds after the statement began: the
statement's return, the first micro-batch planned (its `offsets/0` in the checkpoint), the first
record in the sink topic (a consumer assigned to its partitions from the beginning, no consumer
group to join) and the first micro-batch committed (`commits/0`). The goal (issue #30): the first
output record within 5 s on a warm session.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from ingest import machine_facts, write_report  # noqa: E402
from peers import order  # noqa: E402

STATEMENT = ("CREATE STREAM {name} WITH (KAFKA_TOPIC='{name}', VALUE_FORMAT='JSON') AS "
             "SELECT customer, orderid, qty * price AS total FROM orders WHERE qty > 1;")


def first_record(bootstrap: str, topic: str, t0: float, found: dict, timeout: float) -> None:
    """Seconds after `t0` at which `topic`'s first record is readable (None past `timeout`)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-{topic}",
                         "allow.auto.create.topics": False})
    try:
        while time.perf_counter() - t0 < timeout:
            meta = consumer.list_topics(topic, timeout=5).topics.get(topic)
            if meta is not None and meta.error is None and meta.partitions:
                break
            time.sleep(0.05)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
        while time.perf_counter() - t0 < timeout:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                found["first_record_s"] = round(time.perf_counter() - t0, 2)
                return
    finally:
        consumer.close()


def one_run(session, bootstrap: str, state: str, name: str, timeout: float) -> dict:
    found: dict = {}
    t0 = time.perf_counter()
    waiter = threading.Thread(target=first_record, args=(bootstrap, name, t0, found, timeout), daemon=True)
    waiter.start()
    query = session.sql(STATEMENT.format(name=name))
    found["statement_s"] = round(time.perf_counter() - t0, 2)
    checkpoint = Path(state) / query.id
    marks = {"offsets/0": checkpoint / "offsets" / "0", "commits/0": checkpoint / "commits" / "0"}
    while marks and time.perf_counter() - t0 < timeout:
        for mark, path in list(marks.items()):
            if path.exists():
                found[f"{mark}_s"] = round(time.perf_counter() - t0, 2)
                del marks[mark]
        time.sleep(0.02)
    waiter.join()
    session.sql(f"TERMINATE {query.id};")
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "first-output.json"))
    args = ap.parse_args(argv)

    from kafkasql_magic.local import LocalStack, produce
    from kafkasql_magic.session import Session
    from kafkasql_magic.sparkenv import local_spark

    report: dict = {"records": args.records, **machine_facts(), "load_average_start": list(os.getloadavg()),
                    "runs": []}
    dumps = lambda v: json.dumps(v, separators=(",", ":")).encode()  # noqa: E731
    with LocalStack() as stack, tempfile.TemporaryDirectory() as state:
        bootstrap = stack.bootstrap_servers
        produce(bootstrap, "orders", ({"key": (o := order(i))["customer"].encode(), "timestamp": o["ts"],
                                       "value": dumps(o)} for i in range(args.records)), create_partitions=4)
        t = time.perf_counter()
        spark = local_spark()
        report["spark_start_s"] = round(time.perf_counter() - t, 1)
        session = Session(bootstrap, spark=spark, timeout=600, state_dir=state)
        session.sql("SET 'auto.offset.reset'='earliest';")
        session.sql("CREATE STREAM orders (customer STRING KEY, orderid STRING, item STRING, qty INT, "
                    "price DOUBLE, ts BIGINT) WITH (kafka_topic='orders', value_format='JSON');")
        try:
            for run in ["cold"] + [f"warm{i + 1}" for i in range(args.warm)]:
                found = {"run": run, **one_run(session, bootstrap, state, f"first_{run}", args.timeout)}
                print(json.dumps(found), flush=True)
                report["runs"].append(found)
        finally:
            session.stop()
    report["load_average_end"] = list(os.getloadavg())
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
