"""Session fixtures for integration tests: a real embedded broker and one local Spark session.

- `broker`: a running `LocalStack` (use `broker.bootstrap_servers` / `broker.endpoints`).
- `spark`: a `local[2]` SparkSession bound to loopback with the `kafkasql` source registered.
- `new_topic`: a factory creating a uniquely named topic, `new_topic(partitions=1) -> name`.
- `registry`: the embedded Schema Registry's URL.
- `session`: a `kafkasql_magic` session over both, with 'auto.offset.reset' = earliest.

Under `pytest -n N --dist loadgroup` (make test-integration) a worker takes a file at a time, but
every test marked `cluster` goes to one worker, in one group: two workers each running
local-cluster JVMs at once would double the cluster driver's start and load 2 cores beyond what
a Python worker's fixed 10 s connect-back stands.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    for item in items:
        group = "cluster" if item.get_closest_marker("cluster") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def spark_env() -> dict:
    """Environment for Spark and its Python workers: loopback, this interpreter, this checkout."""
    return {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


@pytest.fixture(scope="session")
def broker():
    from kafkasql_magic.local.stack import LocalStack

    with LocalStack() as stack:
        yield stack


@pytest.fixture(scope="session")
def spark():
    os.environ.update(spark_env())
    from pyspark.sql import SparkSession

    from kafkasql_magic.sparkenv import LOCAL_CONF

    builder = SparkSession.builder.master("local[2]").appName("kafkasql_magic-tests")
    for key, value in {**LOCAL_CONF, "spark.sql.execution.arrow.pyspark.enabled": "true",
                       "spark.sql.session.timeZone": "UTC",
                       "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
                       "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"]}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    from kafkasql_magic.sparkenv import prepare

    prepare(session)  # the SQL settings ksql semantics need, and the kafkasql source
    yield session
    session.stop()


@pytest.fixture
def new_topic(broker):
    """`new_topic(partitions=1, prefix="t")` creates a fresh topic and returns its name."""
    from kafkasql_magic.kafka.admin import create_topic

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        create_topic(broker.bootstrap_servers, name, partitions)
        return name

    return make


@pytest.fixture
def session(broker, spark):
    """A ksql session on the shared broker and Spark, reading topics from the beginning."""
    import kafkasql_magic as ks

    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def registry(broker):
    """The URL of the embedded stack's Schema Registry."""
    return broker.endpoints["schema.registry.url"]


@pytest.fixture
def ksql(broker, spark, registry, tmp_path):
    """A session for persistent queries: its checkpoints in the test's own folder, the registry
    set, topics read from the beginning."""
    import kafkasql_magic as ks

    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, schema_registry_url=registry, spark=spark,
                   timeout=90, state_dir=str(tmp_path / "state"))
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def executor_cluster(tmp_path_factory):
    """`executor_cluster(script, *argv, timeout=240) -> CompletedProcess`: runs `script` (with
    `spark` in its globals) on one shared local-cluster[2,1,1024] driver (see cluster_driver.py)."""
    import queue
    import signal
    import subprocess
    import threading

    from cluster_driver import DONE

    log = open(tmp_path_factory.mktemp("cluster") / "driver.log", "w+")
    env = dict(os.environ, **spark_env())
    proc = subprocess.Popen([sys.executable, "-u", str(Path(__file__).with_name("cluster_driver.py"))], env=env,
                            cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                            start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)], daemon=True).start()

    def run(script: str, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
        proc.stdin.write(json.dumps({"script": script, "argv": list(argv)}) + "\n")
        proc.stdin.flush()
        out, rc = [], None
        try:
            while rc is None:
                line = lines.get(timeout=timeout)
                if line is None:  # the driver died
                    rc = proc.wait()
                elif line.startswith(DONE):
                    rc = int(line.split()[1])
                else:
                    out.append(line)
        except queue.Empty:
            rc = -1
        log.seek(0)  # the driver's log, then the script's output (a traceback ends it)
        return subprocess.CompletedProcess(argv, rc, "".join(out), log.read() + "".join(out))

    yield run
    proc.stdin.close()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()
