"""The embedded stack: in-process start/stop, the CLI, and no orphaned brokers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin
from kafkasql_magic.local import stack as stack_mod
from kafkasql_magic.local.broker import Broker
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.local.stack import LocalStack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of ours counts as gone
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _listening(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def test_stack_start_stop_and_endpoints():
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        assert bootstrap.startswith("127.0.0.1:")
        assert stack.endpoints["bootstrap.servers"] == bootstrap
        assert stack.endpoints["schema.registry.url"].startswith("http://127.0.0.1:")
        assert stack.is_running() and "running" in repr(stack)
        produce(bootstrap, "hello", [{"value": b"x"}], create_partitions=1)
        assert ("hello", 1) in admin.list_topics(bootstrap)
        pid = stack.broker.pid
        assert stack.broker.log_path.exists()
    assert not stack.is_running()
    assert _gone(pid) and not _listening(bootstrap)


def test_each_embedded_broker_is_a_cluster_of_its_own():
    """A persistent query's checkpoints are kept per cluster id: a new broker (memory storage,
    its topics empty) must not meet the checkpoints an earlier broker's queries left."""
    ids = []
    for _ in range(2):
        with LocalStack() as stack:
            ids.append(admin.cluster_id(stack.bootstrap_servers))
    assert ids[0] != ids[1] and all(i.startswith("tansu") for i in ids), ids


def test_default_stack_is_idempotent():
    try:
        first = stack_mod.start_default()
        assert stack_mod.start_default() is first
        assert stack_mod.default() is first
        pid = first.broker.pid
    finally:
        assert stack_mod.stop_default() is True
    assert stack_mod.default() is None and stack_mod.stop_default() is False
    assert _gone(pid)


def test_broker_that_cannot_start_is_a_clear_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        broker = Broker(port=port, start_timeout=10)
        with pytest.raises(KafkaError, match=f"127.0.0.1:{port}") as info:
            broker.start()
    assert "broker log" in str(info.value) or "exited" in str(info.value)
    assert not broker.is_running()


def test_cli_up_status_down(tmp_path):
    state = tmp_path / "local.json"
    env = _env(KAFKASQL_LOCAL_STATE=str(state))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "kafkasql_magic.local", *args], env=env,
                              capture_output=True, text=True, timeout=60, cwd=str(tmp_path))

    res = cli("status")
    assert res.returncode == 1 and "not running" in res.stdout
    up = cli("up")
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("bootstrap.servers=127.0.0.1:")
    bootstrap = up.stdout.strip().splitlines()[0].split("=", 1)[1]
    try:
        assert _listening(bootstrap)
        admin.list_topics(bootstrap)  # it answers Kafka requests
        again = cli("up")  # already running: same endpoints
        assert again.returncode == 0 and again.stdout == up.stdout
        status = cli("status")
        assert status.returncode == 0 and status.stdout == up.stdout
        serve_pid = json.loads(state.read_text())["pid"]
    finally:
        down = cli("down")
    assert down.returncode == 0
    assert not state.exists()
    assert _gone(serve_pid) and not _listening(bootstrap)
    res = cli("status")
    assert res.returncode == 1 and "not running" in res.stdout


def test_cli_stale_state_file(tmp_path):
    state = tmp_path / "local.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state.write_text(json.dumps({"pid": dead.pid, "endpoints": {"bootstrap.servers": "127.0.0.1:1"}}))
    res = subprocess.run([sys.executable, "-m", "kafkasql_magic.local", "status"],
                         env=_env(KAFKASQL_LOCAL_STATE=str(state)), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1 and "not running" in res.stdout


ORPHAN_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from kafkasql_magic.local.broker import Broker
    from kafkasql_magic.kafka.producer import produce
    holder = {}
    def start():  # from a short-lived thread: the broker must still live as long as we do
        holder["b"] = Broker().start()
    t = threading.Thread(target=start); t.start(); t.join()
    b = holder["b"]
    produce(b.bootstrap_servers, "x", [{"value": b"1"}], create_partitions=1)  # a connected client
    time.sleep(1.0)
    assert b.is_running(), "broker died with its starting thread"
    print(b.pid, b.bootstrap_servers, flush=True)
    time.sleep(600)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_broker_dies_with_a_killed_parent():
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line, parent.stderr.read()
        pid_text, bootstrap = line.split()
        broker_pid = int(pid_text)
        os.kill(broker_pid, 0)  # alive while the parent lives
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _gone(broker_pid, timeout=10), "the broker outlived its parent"
        assert not _listening(bootstrap)
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_broker_survives_an_interrupt_of_its_kernels_process_group():
    """Jupyter's Interrupt sends SIGINT to the kernel's whole process group: the broker must not be in it."""
    # The kernel ignores SIGINT before it says it is ready, so only the broker's fate is tested.
    script = ORPHAN_SCRIPT.replace("print(b.pid", "signal.signal(signal.SIGINT, signal.SIG_IGN)\nprint(b.pid")
    assert script != ORPHAN_SCRIPT
    parent = subprocess.Popen([sys.executable, "-c", "import signal\n" + script], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = parent.stdout.readline()
        assert line, parent.stderr.read()
        pid_text, bootstrap = line.split()
        broker_pid = int(pid_text)
        assert os.getpgid(broker_pid) != os.getpgid(parent.pid)
        os.killpg(parent.pid, signal.SIGINT)  # what the notebook's Interrupt button does
        time.sleep(1.0)
        assert parent.poll() is None and _listening(bootstrap), "the broker died on Interrupt"
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _gone(broker_pid, timeout=10), "the broker outlived its kernel"
    finally:
        if parent.poll() is None:
            parent.kill()
