"""Every stateful kind of persistent query gives on `local-cluster[2,1,1024]` (two executor JVMs,
their Python workers, their RocksDB state stores) the output it gives on `local[2]`: SESSION and
HOPPING windows, a table aggregation whose groups lose rows, a stream-table join, a
stream-stream join, a foreign-key table-table join, a GROUP BY over it and a LEFT join after
it, over the same records, their sink topics read back (tables folded to their last value per
key, streams as sorted records). The keyed steps in pandas and in rows, the processors pickled
to executors, and the state schemas all cross to processes that are not the driver's."""

from __future__ import annotations

import json
import textwrap
import time
import uuid
import warnings

import pytest

from kafkasql_magic.kafka.producer import produce

from sink_outputs import outputs

BASE = 1_700_000_040_000
USERS = [f"u{i}" for i in range(5)]  # u4 has no row in USERS
CLICKS = [(USERS[i % 5], i, BASE + i * 1000 + (60_000 if i >= 20 else 0)) for i in range(40)]  # two sessions a user
PAYS = [(USERS[j % 5], j, BASE + j * 4000 + 500) for j in range(10)]
LATER = BASE + 500_000  # the table changes come after every click in time
SHIPS = [("o0", "post"), ("o1", "box"), ("o2", "van"), ("o6", "ship")]  # o1's goes at LATER

SOURCES = """
    CREATE STREAM CLICKS (USER STRING KEY, N INT) WITH (kafka_topic='{clicks}', value_format='JSON');
    CREATE STREAM PAYS (USER STRING KEY, AMT INT) WITH (kafka_topic='{pays}', value_format='JSON');
    CREATE TABLE USERS (ID STRING PRIMARY KEY, NAME STRING, REGION STRING) WITH (kafka_topic='{users}', value_format='JSON');
    CREATE TABLE ORDERS (ID STRING PRIMARY KEY, USER STRING, AMOUNT INT) WITH (kafka_topic='{orders}', value_format='JSON');
    CREATE TABLE SHIPS (ID STRING PRIMARY KEY, CARRIER STRING) WITH (kafka_topic='{ships}', value_format='JSON');
"""

#: sink name -> (its kind, its query)
QUERIES = {
    "SESS": ("table", "CREATE TABLE {name} AS SELECT USER, COUNT(*) AS C, SUM(N) AS S FROM CLICKS "
                      "WINDOW SESSION (6 SECONDS, GRACE PERIOD 1 HOUR) GROUP BY USER;"),
    "HOPS": ("table", "CREATE TABLE {name} AS SELECT USER, COUNT(*) AS C, MAX(N) AS M FROM CLICKS "
                      "WINDOW HOPPING (SIZE 20 SECONDS, ADVANCE BY 10 SECONDS, GRACE PERIOD 1 HOUR) GROUP BY USER;"),
    "REGIONS": ("table", "CREATE TABLE {name} AS SELECT REGION, COUNT(*) AS C FROM USERS GROUP BY REGION;"),
    "ENRICHED": ("stream", "CREATE STREAM {name} AS SELECT C.USER, C.N, U.NAME FROM CLICKS C "
                           "LEFT JOIN USERS U ON C.USER = U.ID;"),
    "PAIRED": ("stream", "CREATE STREAM {name} AS SELECT C.USER, C.N, P.AMT FROM CLICKS C "
                         "JOIN PAYS P WITHIN 3 SECONDS GRACE PERIOD 1 HOUR ON C.USER = P.USER;"),
    "NAMED": ("table", "CREATE TABLE {name} AS SELECT O.ID, O.AMOUNT, U.NAME FROM ORDERS O "
                       "JOIN USERS U ON O.USER = U.ID;"),
    "SPEND": ("table", "CREATE TABLE {name} AS SELECT U.REGION, COUNT(*) AS C, SUM(O.AMOUNT) AS T FROM ORDERS O "
                       "JOIN USERS U ON O.USER = U.ID GROUP BY U.REGION;"),
    "SHIPPED": ("table", "CREATE TABLE {name} AS SELECT O.ID, U.NAME, S.CARRIER FROM ORDERS O "
                         "JOIN USERS U ON O.USER = U.ID LEFT JOIN SHIPS S ON O.ID = S.ID;"),
}

CLUSTER_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import kafkasql_magic as ks
    from sink_outputs import outputs
    bootstrap, state, text, sinks, expected_file = sys.argv[1:6]
    sinks, expected = json.loads(sinks), json.load(open(expected_file))

    def tasks_by_executor():  # each executor's tasks so far, from Spark's status store
        executors = spark.sparkContext._jsc.sc().statusStore().executorList(True).iterator()
        tasks = {}
        while executors.hasNext():
            e = executors.next()
            if e.id() != "driver":
                tasks[e.id()] = e.totalTasks()
        return tasks

    before = tasks_by_executor()
    s = ks.connect(bootstrap_servers=bootstrap, spark=spark, state_dir=state, timeout=120)
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "4")  # the state's partitions, over both executors
    try:
        s.sql("SET 'auto.offset.reset'='earliest';")
        s.sql(text)
        deadline, got, seen = time.monotonic() + 240, None, []
        while time.monotonic() < deadline:  # a failed query restarts from its checkpoint: wait on
            got = outputs(bootstrap, sinks)
            seen += [f"{q.id}: {q.failure}"[:3000] for q in s.persistent.queries.values()
                     if q.failure and f"{q.id}: {q.failure}"[:3000] not in seen]
            if got == expected:
                break
            time.sleep(2)
        failed = [f"{q.id}: {q.failure}"[:3000] for q in s.persistent.queries.values() if q.failure]
    finally:
        s.stop()
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    ran = {e: n - before.get(e, 0) for e, n in tasks_by_executor().items()}
    print("RESULT " + json.dumps({"got": got, "failed": failed, "seen": seen, "master": spark.sparkContext.master,
                                  "tasks_by_executor": ran}))
""")


def _row(key: str, value: dict | None, timestamp: int) -> dict:
    return {"key": key.encode(), "value": None if value is None else json.dumps(value).encode(),
            "timestamp": timestamp}


def _produce_inputs(bootstrap: str, new_topic) -> dict[str, str]:
    topics = {"clicks": new_topic(2), "pays": new_topic(1), "users": new_topic(2), "orders": new_topic(2),
              "ships": new_topic(2)}
    produce(bootstrap, topics["users"],
            [_row(u, {"NAME": f"n{i}", "REGION": f"r{i % 2}"}, BASE - 1000) for i, u in enumerate(USERS[:4])]
            + [_row("u1", {"NAME": "n1", "REGION": "r0"}, LATER), _row("u2", None, LATER)])
    produce(bootstrap, topics["orders"],
            [_row(f"o{i}", {"USER": USERS[i % 5], "AMOUNT": i}, BASE) for i in range(8)]
            + [_row("o2", {"USER": "u3", "AMOUNT": 2}, LATER), _row("o5", None, LATER)])
    produce(bootstrap, topics["ships"], [_row(o, {"CARRIER": c}, BASE) for o, c in SHIPS]
            + [_row("o1", None, LATER)])
    produce(bootstrap, topics["clicks"], [_row(u, {"N": n}, t) for u, n, t in CLICKS])
    produce(bootstrap, topics["pays"], [_row(u, {"AMT": a}, t) for u, a, t in PAYS])
    return topics


def _sizes() -> dict[str, int]:
    """How many keys (tables) or records (streams) each sink holds once everything is read."""
    hopping = {(u, start) for u, _, t in CLICKS for start in range((t - 20_000) // 10_000 * 10_000 + 10_000,
                                                                     t + 1, 10_000) if start <= t < start + 20_000}
    pairs = [(c, p) for c in CLICKS for p in PAYS if c[0] == p[0] and abs(c[2] - p[2]) <= 3000]
    return {"SESS": 10, "HOPS": len(hopping), "REGIONS": 2, "ENRICHED": len(CLICKS), "PAIRED": len(pairs), "NAMED": 5,
            "SPEND": 2, "SHIPPED": 5}


def _statements(run: str, topics: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The sources and every query, the sinks named for `run`; and {sink topic: kind}."""
    text = SOURCES.format(**topics)
    sinks = {}
    for name, (kind, query) in QUERIES.items():
        text += query.format(name=f"{name}_{run}") + "\n"
        sinks[f"{name}_{run}"] = kind
    return text, sinks


def _settled(bootstrap: str, sinks: dict[str, str], ksql, run: str) -> dict:
    """The local run's outputs once every sink has its size and two reads 3 s apart agree."""
    want = {f"{name}_{run}": size for name, size in _sizes().items()}
    deadline, last = time.monotonic() + 240, None
    while time.monotonic() < deadline:
        failures = [f"{q.id}: {q.failure}" for q in ksql.persistent.queries.values() if q.failure]
        assert not failures, failures
        got = outputs(bootstrap, sinks)
        if {topic: len(out) for topic, out in got.items()} == want and got == last:
            return got
        last = got
        time.sleep(3)
    raise AssertionError(f"the local run never settled: sizes {({t: len(o) for t, o in (last or {}).items()})} "
                         f"where {want} were expected")


@pytest.mark.cluster
def test_every_stateful_kind_gives_on_a_cluster_what_it_gives_locally(broker, ksql, new_topic, executor_cluster,
                                                                        tmp_path):
    bootstrap = broker.bootstrap_servers
    topics = _produce_inputs(bootstrap, new_topic)
    run = uuid.uuid4().hex[:6].upper()

    local_text, local_sinks = _statements(f"L{run}", topics)
    ksql.sql(local_text)
    local = _settled(bootstrap, local_sinks, ksql, f"L{run}")
    ksql.stop()
    regions = local[f"REGIONS_L{run}"]  # u1 moved from r1 to r0, u2 left r0
    assert regions == {b"r0".hex(): {"C": 2}, b"r1".hex(): {"C": 1}}, regions
    named = sorted((bytes.fromhex(k).decode(), v["NAME"]) for k, v in local[f"NAMED_L{run}"].items())
    assert named == [("o0", "n0"), ("o1", "n1"), ("o2", "n3"), ("o3", "n3"), ("o6", "n1")], named
    shipped = sorted((bytes.fromhex(k).decode(), v["NAME"], v["CARRIER"]) for k, v in local[f"SHIPPED_L{run}"].items())
    assert shipped == [("o0", "n0", "post"), ("o1", "n1", None), ("o2", "n3", "van"), ("o3", "n3", None),
                       ("o6", "n1", "ship")], shipped
    spend = local[f"SPEND_L{run}"]  # those orders by their user's region now: o0, o1 and o6 in r0
    assert spend == {b"r0".hex(): {"C": 3, "T": 7}, b"r1".hex(): {"C": 2, "T": 5}}, spend

    cluster_text, cluster_sinks = _statements(f"C{run}", topics)
    expected = tmp_path / "expected.json"  # the local outputs under the cluster's sink names
    expected.write_text(json.dumps({topic.replace(f"_L{run}", f"_C{run}"): out for topic, out in local.items()}))
    out = executor_cluster(CLUSTER_SCRIPT, bootstrap, str(tmp_path / "cluster-state"), cluster_text,
                           json.dumps(cluster_sinks), str(expected), timeout=420)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc={out.returncode})\n{out.stderr[-4000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["master"] == "local-cluster[2,1,1024]", result
    assert sum(n > 0 for n in result["tasks_by_executor"].values()) >= 2, result["tasks_by_executor"]
    assert result["failed"] == [], result["failed"]
    for topic, kind in cluster_sinks.items():
        assert result["got"][topic] == json.loads(expected.read_text())[topic], \
            f"{topic} ({kind}) differs; failures seen on the way: {result['seen']}"
    for failure in result["seen"]:  # restarted from its checkpoint and gave the same output: say so all the same
        warnings.warn(f"a query failed on the cluster and was restarted: {failure}")
