"""A persistent query survives a crash of its process: the process (driver, Spark's JVM and its
Python workers) is killed with SIGKILL while a micro-batch is being written; a new process with
the same service id replays the command topic and the query resumes from its checkpoint.
Counted: every record arrives, and the only duplicates are records of the micro-batch that was
in flight at the kill (at-least-once). A Materialize sink over a connection survives a restart
although secrets never reach the command topic: a new session's connection waits for its
secret, says which CREATE SECRET to run, and once it runs the sink resumes from its checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.sinks.command_log import topic_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WAIT_S = 420  # a loaded 2-core machine takes tens of seconds per micro-batch; done sooner when not

SCRIPT = textwrap.dedent("""
    import sys, time
    import kafkasql_magic as ks
    from kafkasql_magic.sparkenv import local_spark
    bootstrap, service, state, topic, sink = sys.argv[1:6]
    s = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=state, spark=local_spark("local[2]"))
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"CREATE STREAM SRC_{service} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = s.sql(f"CREATE STREAM {sink} AS SELECT * FROM SRC_{service};")
    print("STARTED", query.id, flush=True)
    while True:  # runs until the test kills it
        time.sleep(1)
""")


def env() -> dict:
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))


def values(numbers):
    return [{"key": i.to_bytes(4, "big"), "value": json.dumps({"V": f"v{i}"}).encode()} for i in numbers]


def sink_values(bootstrap: str, sink: str) -> list[int]:
    try:
        got = fetch_records(bootstrap, sink, from_beginning=True, limit=None, timeout_s=2, until_end=True)
    except Exception:  # noqa: BLE001 - the sink topic does not exist yet
        return []
    return [int(json.loads(r["value"])["V"][1:]) for r in got]


def wait_until(condition, what: str, proc: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if proc is not None and proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"the query's process ended ({proc.returncode}) before {what}:\n{log.read()[-3000:]}")
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S}s"
        time.sleep(0.5)


def batch_in_flight(checkpoint: Path) -> range:
    """Offsets of the micro-batch planned (offsets/N) but not committed (no commits/N)."""
    planned = sorted(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    committed = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    last = planned[-1]
    if last in committed:
        return range(0)

    def end(batch: int) -> int:
        return json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[-1])["0"]

    return range(end(last - 1) if last > 0 else 0, end(last))


def test_query_killed_mid_batch_resumes_in_a_new_process_without_loss(broker, spark, new_topic, tmp_path, capsys):
    bootstrap = broker.bootstrap_servers
    service = f"svc{uuid.uuid4().hex[:6]}"
    topic, sink = new_topic(1), f"OUT_{service.upper()}"
    script, state = tmp_path / "app.py", tmp_path / "state"
    script.write_text(SCRIPT)
    args = [sys.executable, str(script), bootstrap, service, str(state), topic, sink]
    log = open(tmp_path / "first.log", "w+")  # a file, not a pipe: Spark's output cannot block the process
    produce(bootstrap, topic, values(range(0, 50)))
    first = subprocess.Popen(args, env=env(), cwd=ROOT, text=True, start_new_session=True,
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: len(set(sink_values(bootstrap, sink))) == 50, "first micro-batch", first, log)
        produce(bootstrap, topic, values(range(50, 80)))
        wait_until(lambda: max(sink_values(bootstrap, sink)) >= 50, "record of the second batch", first, log)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # driver, Spark's JVM and its Python workers at once
        first.wait()
        log.close()
    assert first.returncode == -signal.SIGKILL
    in_flight = batch_in_flight(state / f"CSAS_{sink}_1")
    produce(bootstrap, topic, values(range(80, 100)))  # arrives while no query runs

    # this test's process (its own Spark JVM, not the killed one's) resumes the query
    second = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=str(state), spark=spark, timeout=90)
    try:
        restored = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Restored")]
        query = next(iter(second.persistent.queries.values()))
        wait_until(lambda: query.state != "RUNNING" or len(set(sink_values(bootstrap, sink))) == 100,
                   "every record after the restart", None, None)
        assert (query.id, query.state, query.failure) == (f"CSAS_{sink}_1", "RUNNING", None)
    finally:
        second.stop()
    assert restored == [f"Restored 2 source(s) and restarted 1 persistent query (CSAS_{sink}_1) from 2 command(s)"]

    got = sink_values(bootstrap, sink)
    assert sorted(set(got)) == list(range(100))  # nothing lost
    duplicates = sorted(v for v in set(got) if got.count(v) > 1)
    assert set(duplicates) <= set(in_flight), (duplicates, in_flight)  # only the batch in flight, once more
    assert all(got.count(v) == 2 for v in duplicates)
    assert len(got) == 100 + len(duplicates)
    print(f"killed with offsets {in_flight} in flight; {len(duplicates)} record(s) written twice")


MZ = {"dialect": "materialize"}


def test_a_sink_over_a_connection_waits_for_its_secret_after_a_restart(broker, spark, new_topic, tmp_path, capsys):
    bootstrap = broker.bootstrap_servers
    service, secret = f"svc{uuid.uuid4().hex[:6]}", f"Pw-{uuid.uuid4().hex}"
    topic, out, state = new_topic(1), f"out-{service}", tmp_path / "state"
    # the connection names the broker as localhost: its client properties stay off other tests' clients
    elsewhere = "localhost:" + bootstrap.rsplit(":", 1)[1]
    produce(bootstrap, topic, [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(3)])
    first = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=str(state), spark=spark,
                       timeout=90, **MZ)
    try:
        first.sql(f"""
            CREATE SECRET pw AS '{secret}';
            CREATE CONNECTION kc TO KAFKA (BROKER '{elsewhere}', SECURITY PROTOCOL = PLAINTEXT,
                SASL MECHANISMS = 'PLAIN', SASL USERNAME = 'u', SASL PASSWORD = SECRET pw);
            CREATE SOURCE src FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT
                INCLUDE KEY AS id ENVELOPE UPSERT;""")
        query = first.sql(f"CREATE SINK snk FROM src INTO KAFKA CONNECTION kc (TOPIC '{out}') KEY (id) "
                          "FORMAT JSON ENVELOPE UPSERT")
        assert query.wait_for_records(3, 120), query.failure
        wait_until(lambda: (state / query.id / "commits" / "0").exists(), "the batch committed", None, None)
    finally:
        first.stop()
    logged = fetch_records(bootstrap, topic_name(service), from_beginning=True, limit=None, timeout_s=10,
                           until_end=True)
    statements = [json.loads(r["value"])["statement"] for r in logged]
    assert [s.split()[1] for s in statements] == ["CONNECTION", "SOURCE", "SINK"]  # no CREATE SECRET
    assert not any(secret.encode() in r["value"] for r in logged)
    produce(bootstrap, topic, [{"key": b"k3", "value": b"v3"}])  # arrives while no query runs

    # a new session (as after a kernel restart: secrets live in a session only), in this process's
    # Spark: test_query_killed_mid_batch_resumes_in_a_new_process_without_loss covers a new process
    capsys.readouterr()
    second = ks.connect(bootstrap_servers=bootstrap, service_id=service, state_dir=str(state), spark=spark,
                        timeout=90, **MZ)
    try:
        restored = capsys.readouterr()
        sinks = second.sql("SHOW SINKS").name.tolist()
        replayed = str(second.sql(f"CREATE SECRET pw AS '{secret}'"))
        resumed = next(iter(second.persistent.queries.values()))
        resumed.wait_for_records(1, WAIT_S)
        result = (resumed.id, resumed.state, resumed.records_out)
    finally:
        second.stop()
    shown = restored.out + restored.err + "".join(capsys.readouterr())
    waits = ("connection 'kc' needs secret 'pw', which this session does not have (secret values are never "
             "written to the command topic): re-create it with CREATE SECRET pw AS '...'")
    assert [line for line in restored.out.splitlines() if line.startswith("Restored")] == [
        "Restored 1 source(s) and restarted 0 persistent queries from 3 command(s); "
        f"2 command(s) wait for secrets: {statements[0].splitlines()[0][:60]}: {waits}; "
        f"{statements[2].splitlines()[0][:60]}: {waits}"]
    assert sinks == []  # waiting, not running
    assert replayed == f"Replayed 2 command(s) that waited for secrets; restarted {query.id}"
    assert result == (query.id, "RUNNING", 1)  # from its checkpoint: only the new record
    got = fetch_records(bootstrap, out, from_beginning=True, limit=None, timeout_s=5, until_end=True)
    assert sorted(json.loads(r["key"])["id"] for r in got) == ["k0", "k1", "k2", "k3"]
    assert secret not in shown
