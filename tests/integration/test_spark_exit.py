"""Spark's JVM dying under a session (killed here with SIGKILL, as the system's out-of-memory
killer does) is said once, with its exit code and cause, by the statement that meets it, whether
it died between statements or during one; the next statement runs on a new Spark session. Run
in a process of its own: the shared test session's JVM must live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    import kafkasql_magic as ks
    from kafkasql_magic.errors import SparkExited
    from pyspark import SparkContext

    bootstrap, topic = sys.argv[1:3]
    said = {}
    s = ks.connect(bootstrap_servers=bootstrap, timeout=120)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"CREATE STREAM quiet (v INT) WITH (kafka_topic='{topic}', partitions=1, value_format='JSON');")

    def kill():
        proc = SparkContext._gateway.proc
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)

    def run(sql):
        try:
            return s.sql(sql, dialect="materialize").to_dict("records")
        except SparkExited as exc:
            return "exited: " + str(exc)

    said["first"] = run("SELECT 1 AS x")
    kill()  # between two statements
    said["after_a_death_between"] = run("SELECT 2 AS x")
    said["next"] = run("SELECT 3 AS x")
    threading.Timer(10, kill).start()  # during a statement: a push query waiting for rows
    try:
        s.sql("SELECT * FROM quiet EMIT CHANGES LIMIT 1;")
        said["during"] = "no error"
    except SparkExited as exc:
        said["during"] = "exited: " + str(exc)
    said["after_a_death_during"] = run("SELECT 4 AS x")
    print("SAID", json.dumps(said), flush=True)
""")


def test_a_dead_jvm_is_said_once_with_its_cause_and_the_next_statement_starts_a_new_session(broker, new_topic):
    topic = new_topic()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", SCRIPT, broker.bootstrap_servers, topic], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("SAID ")]
    assert lines, done.stdout + done.stderr[-4000:]
    said = json.loads(lines[0][5:])
    assert said["first"] == [{"x": 1}]
    for death in ("after_a_death_between", "during"):
        assert said[death].startswith("exited: Spark's JVM exited with code -9: it was killed (SIGKILL"), said
        assert said[death].endswith("the next statement starts a new Spark session."), said
    assert said["next"] == [{"x": 3}]
    assert said["after_a_death_during"] == [{"x": 4}]


def test_the_local_jvm_keeps_compiling_past_48_mb_of_code(spark):
    """With the quick compiler only, the JVM's code cache would be 48 MB: a kernel that ran a few
    dozen queries filled it, the JVM stopped compiling and then died wanting a method handle."""
    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert bean.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(bean.getVMOption("ReservedCodeCacheSize").getValue()) >= 240 * 1024 * 1024
