"""Keyed state on a Spark cluster survives a killed process: a persistent TUMBLING aggregation
and a primary-key table-table join run on `local-cluster[2,1,1024]` (two executor JVMs keep the
state in their RocksDB stores); the driver's process group is killed with SIGKILL while records
arrive, more records arrive while nothing runs, and a new process with the same service id
resumes both queries from their checkpoints. Counted from the sink topics: every window's last
COUNT and SUM is the one of all its input records (nothing lost, nothing counted twice), and
every joined row is the one of both tables' last rows (a delete that arrived while nothing ran
included)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

from sink_outputs import records
from test_restart import env, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = 1_700_000_040_000  # a whole minute: 10-second windows start at BASE + 10 s * n
USERS = ("u0", "u1", "u2")

SCRIPT = textwrap.dedent("""
    import os, sys, time
    from pyspark.sql import SparkSession
    import kafkasql_magic as ks
    from kafkasql_magic.sparkenv import LOCAL_CONF, prepare
    bootstrap, service, state, clicks, orders, payments = sys.argv[1:7]
    builder = SparkSession.builder.master("local-cluster[2,1,1024]")
    for key, value in {**LOCAL_CONF, "spark.executor.memory": "512m",
                       "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"]}.items():
        builder = builder.config(key, value)
    spark = prepare(builder.getOrCreate())
    s = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=state, spark=spark, timeout=120)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f'''
        CREATE STREAM CLICKS_{service} (USER STRING KEY, N INT) WITH (kafka_topic='{clicks}', value_format='JSON');
        CREATE TABLE ORDERS_{service} (ID STRING PRIMARY KEY, AMOUNT INT) WITH (kafka_topic='{orders}', value_format='JSON');
        CREATE TABLE PAYMENTS_{service} (ID STRING PRIMARY KEY, METHOD STRING)
            WITH (kafka_topic='{payments}', value_format='JSON');''')
    windowed = s.sql(f"CREATE TABLE WINDOWED_{service} AS SELECT USER, COUNT(*) AS C, SUM(N) AS S "
                     f"FROM CLICKS_{service} WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 1 HOUR) GROUP BY USER;")
    joined = s.sql(f"CREATE TABLE PAID_{service} AS SELECT O.ID, O.AMOUNT, P.METHOD "
                   f"FROM ORDERS_{service} O JOIN PAYMENTS_{service} P ON O.ID = P.ID;")
    print("STARTED", windowed.id, joined.id, spark.sparkContext.master, flush=True)
    while True:  # runs until the test kills it
        time.sleep(1)
""")


def clicks(first: int, last: int) -> list[dict]:
    """Click i: user i % 3, N = i, at BASE + i seconds (in order: no record is late)."""
    return [{"key": USERS[i % 3].encode(), "value": json.dumps({"N": i}).encode(), "timestamp": BASE + i * 1000}
            for i in range(first, last)]


def row(key: str, value: dict | None) -> dict:
    return {"key": key.encode(), "value": None if value is None else json.dumps(value).encode()}


PARTS = {  # what arrives before the start, while the first process runs, while nothing runs
    "clicks": (clicks(0, 30), clicks(30, 60), clicks(60, 90)),
    "orders": ([row(f"o{i}", {"AMOUNT": i}) for i in range(10)],
               [row("o0", {"AMOUNT": 100}), row("o3", {"AMOUNT": 103})],
               [row("o2", {"AMOUNT": 102})]),
    "payments": ([row(f"o{i}", {"METHOD": "card"}) for i in range(5)],
                 [row(f"o{i}", {"METHOD": "cash"}) for i in range(5, 8)],
                 [row("o8", {"METHOD": "card"}), row("o1", None)]),
}


def expected_windows(records: list[dict]) -> dict:
    counts: dict = {}
    for r in records:
        key = (r["key"].decode(), (r["timestamp"] - BASE) // 10_000 * 10)
        c, s = counts.get(key, (0, 0))
        counts[key] = (c + 1, s + json.loads(r["value"])["N"])
    return {k: {"C": c, "S": s} for k, (c, s) in counts.items()}


def expected_join(orders: list[dict], payments: list[dict]) -> dict:
    last = lambda rows: {r["key"].decode(): r["value"] and json.loads(r["value"]) for r in rows}  # noqa: E731
    o, p = last(orders), last(payments)
    return {k: {"AMOUNT": o[k]["AMOUNT"], "METHOD": p[k]["METHOD"]} for k in o if o[k] and p.get(k)}


def last_windows(bootstrap: str, topic: str) -> dict:
    """(user, window start in seconds after BASE) -> the window's last row."""
    got = {}
    for r in records(bootstrap, topic):
        got[(r["key"][:-8].decode(), (int.from_bytes(r["key"][-8:], "big") - BASE) // 1000)] = json.loads(r["value"])
    return got


def last_rows(bootstrap: str, topic: str) -> dict:
    """Joined id -> its last row (a tombstone removes it)."""
    got = {}
    for r in records(bootstrap, topic):
        got[r["key"].decode()] = r["value"] and json.loads(r["value"])
    return {k: v for k, v in got.items() if v is not None}


@pytest.mark.cluster
def test_keyed_state_on_a_cluster_resumes_exactly_after_the_process_is_killed(broker, spark, new_topic, tmp_path):
    bootstrap = broker.bootstrap_servers
    service = f"svc{uuid.uuid4().hex[:6]}"
    topics = {name: new_topic(2) for name in PARTS}
    windowed, joined = f"WINDOWED_{service}".upper(), f"PAID_{service}".upper()
    sent = {name: [] for name in PARTS}

    def send(part: int) -> None:
        for name, parts in PARTS.items():
            produce(bootstrap, topics[name], parts[part])
            sent[name] += parts[part]

    def as_expected() -> bool:
        return (last_windows(bootstrap, windowed) == expected_windows(sent["clicks"])
                and last_rows(bootstrap, joined) == expected_join(sent["orders"], sent["payments"]))

    script, state = tmp_path / "app.py", tmp_path / "state"
    script.write_text(SCRIPT)
    log = open(tmp_path / "first.log", "w+")  # a file, not a pipe: Spark's output cannot block the process
    send(0)
    first = subprocess.Popen([sys.executable, str(script), bootstrap, service, str(state),
                              topics["clicks"], topics["orders"], topics["payments"]],
                             env=env(), cwd=ROOT, text=True, start_new_session=True,
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(as_expected, "the first records' results", first, log)
        written = len(records(bootstrap, windowed)) + len(records(bootstrap, joined))
        send(1)
        wait_until(lambda: len(records(bootstrap, windowed)) + len(records(bootstrap, joined)) > written,
                   "a result of the second records", first, log)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # driver, executors and their Python workers at once
        first.wait()
        log.seek(0)
        started = next((line.split() for line in log if line.startswith("STARTED")), None)
        log.close()
    assert first.returncode == -signal.SIGKILL
    assert started is not None and started[3] == "local-cluster[2,1,1024]", started
    send(2)  # arrives while nothing runs: o1's payment deleted among it

    second = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=str(state), spark=spark, timeout=90)
    try:
        queries = list(second.persistent.queries.values())
        wait_until(lambda: as_expected() or any(q.state != "RUNNING" for q in queries),
                   "every result after the restart", None, None)
        assert sorted((q.id, q.state, q.failure) for q in queries) == sorted(
            [(started[1], "RUNNING", None), (started[2], "RUNNING", None)])
    finally:
        second.stop()
    assert last_windows(bootstrap, windowed) == expected_windows(sent["clicks"])
    assert last_rows(bootstrap, joined) == expected_join(sent["orders"], sent["payments"])
