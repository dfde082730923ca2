"""Every stateful kind of persistent query gives on `local-cluster[2,1,1024]` (two executor JVMs,
their Python workers, their RocksDB state stores) the output it gives on `local[2]`: SESSION and
HOPPING windows, a table aggregation whose groups lose rows, a stream-table join, a
stream-stream join, a foreign-key table-table join, a GROUP BY over it and a LEFT join after
it; in a second, smaller run, TUMBLING windows with EMIT FINAL (closed by event-time timers)
and with the record cache off (a change per record). The same records in, their sink topics
read back (tables folded to their last value per key, streams as sorted records). The keyed steps in pandas and in rows, the processors pickled
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

#: EMIT FINAL and the record cache off: their own run, so that no more queries start at once
#: than the test above starts (each streaming source's Python worker must connect back to its
#: JVM within Spark's fixed 10 s). With the cache off every record writes its window's new
#: value, so that sink is compared record by record.
WINDOW_EMITS = {
    "FINAL": ("table", "CREATE TABLE {name} AS SELECT USER, COUNT(*) AS C, SUM(AMT) AS S FROM PAYS "
                       "WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 0 SECONDS) GROUP BY USER EMIT FINAL;"),
    "EACH": ("stream", "SET 'cache.max.bytes.buffering'='0';\n"
                       "CREATE TABLE {name} AS SELECT USER, COUNT(*) AS C, SUM(AMT) AS S FROM PAYS "
                       "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY USER;\n"
                       "UNSET 'cache.max.bytes.buffering';"),
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
        def failing():  # each failed query, named, as text
            return [f"{q.id}: {q.failure}"[:3000] for q in s.persistent.queries.values() if q.failure]

        deadline, got, seen = time.monotonic() + 240, None, []
        while time.monotonic() < deadline:  # a failed query restarts from its checkpoint: wait on
            got = outputs(bootstrap, sinks)
            seen += [f for f in failing() if f not in seen]
            if got == expected:
                break
            time.sleep(2)
        failed = failing()
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
    """How many keys (tables) or records (streams) each sink of QUERIES holds once everything is read."""
    hopping = {(u, start) for u, _, t in CLICKS for start in range((t - 20_000) // 10_000 * 10_000 + 10_000,
                                                                     t + 1, 10_000) if start <= t < start + 20_000}
    pairs = [(c, p) for c in CLICKS for p in PAYS if c[0] == p[0] and abs(c[2] - p[2]) <= 3000]
    return {"SESS": 10, "HOPS": len(hopping), "REGIONS": 2, "ENRICHED": len(CLICKS), "PAIRED": len(pairs), "NAMED": 5,
            "SPEND": 2, "SHIPPED": 5}


def _window_emit_sizes() -> dict[str, int]:
    """The same for WINDOW_EMITS: the closed windows (grace 0: before the last payment's time), and
    one change per payment."""
    closed = {(u, t // 10_000) for u, _, t in PAYS if (t // 10_000 + 1) * 10_000 <= max(t for *_, t in PAYS)}
    return {"FINAL": len(closed), "EACH": len(PAYS)}


def _statements(run: str, topics: dict[str, str], queries: dict) -> tuple[str, dict[str, str]]:
    """The sources and every query, the sinks named for `run`; and {sink topic: kind}."""
    text = SOURCES.format(**topics)
    sinks = {}
    for name, (kind, query) in queries.items():
        text += query.format(name=f"{name}_{run}") + "\n"
        sinks[f"{name}_{run}"] = kind
    return text, sinks


def _settled(bootstrap: str, sinks: dict[str, str], ksql, run: str, sizes: dict[str, int]) -> dict:
    """The local run's outputs once every sink has its size and two reads 3 s apart agree."""
    want = {f"{name}_{run}": size for name, size in sizes.items()}
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


def _local(ksql, bootstrap: str, run: str, topics: dict[str, str], queries: dict, sizes: dict[str, int]) -> dict:
    """The queries' outputs on the test session's `local[2]`, once settled; the queries stopped."""
    text, sinks = _statements(f"L{run}", topics, queries)
    ksql.sql(text)
    local = _settled(bootstrap, sinks, ksql, f"L{run}", sizes)
    ksql.stop()
    return local


def _assert_same_on_the_cluster(executor_cluster, bootstrap: str, run: str, topics: dict[str, str], queries: dict,
                                local: dict, tmp_path) -> None:
    """The same queries, over the same topics, on the cluster: every sink as it was locally."""
    cluster_text, cluster_sinks = _statements(f"C{run}", topics, queries)
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


@pytest.mark.cluster
def test_every_stateful_kind_gives_on_a_cluster_what_it_gives_locally(broker, ksql, new_topic, executor_cluster,
                                                                        tmp_path):
    bootstrap = broker.bootstrap_servers
    topics = _produce_inputs(bootstrap, new_topic)
    run = uuid.uuid4().hex[:6].upper()

    local = _local(ksql, bootstrap, run, topics, QUERIES, _sizes())
    regions = local[f"REGIONS_L{run}"]  # u1 moved from r1 to r0, u2 left r0
    assert regions == {b"r0".hex(): {"C": 2}, b"r1".hex(): {"C": 1}}, regions
    named = sorted((bytes.fromhex(k).decode(), v["NAME"]) for k, v in local[f"NAMED_L{run}"].items())
    assert named == [("o0", "n0"), ("o1", "n1"), ("o2", "n3"), ("o3", "n3"), ("o6", "n1")], named
    shipped = sorted((bytes.fromhex(k).decode(), v["NAME"], v["CARRIER"]) for k, v in local[f"SHIPPED_L{run}"].items())
    assert shipped == [("o0", "n0", "post"), ("o1", "n1", None), ("o2", "n3", "van"), ("o3", "n3", None),
                       ("o6", "n1", "ship")], shipped
    spend = local[f"SPEND_L{run}"]  # those orders by their user's region now: o0, o1 and o6 in r0
    assert spend == {b"r0".hex(): {"C": 3, "T": 7}, b"r1".hex(): {"C": 2, "T": 5}}, spend

    _assert_same_on_the_cluster(executor_cluster, bootstrap, run, topics, QUERIES, local, tmp_path)


@pytest.mark.cluster
def test_emit_final_and_a_change_per_record_give_on_a_cluster_what_they_give_locally(broker, ksql, new_topic,
                                                                                     executor_cluster, tmp_path):
    bootstrap = broker.bootstrap_servers
    topics = _produce_inputs(bootstrap, new_topic)
    run = uuid.uuid4().hex[:6].upper()

    local = _local(ksql, bootstrap, run, topics, WINDOW_EMITS, _window_emit_sizes())
    final = sorted(v["S"] for v in local[f"FINAL_L{run}"].values())  # the closed windows' payments, one row each
    assert final == list(range(8)), final
    each = sorted(v["S"] for _, v in local[f"EACH_L{run}"])  # each payment's window total after it
    assert each == sorted(a for _, a, _ in PAYS), each  # a user's two payments 20 s apart: one a window

    _assert_same_on_the_cluster(executor_cluster, bootstrap, run, topics, WINDOW_EMITS, local, tmp_path)
