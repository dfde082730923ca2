"""`python -m kafkasql_magic.local up|down|status` (also `kafkasql-local`).

`up` starts the embedded stack in a detached background process (it outlives this command),
waits until it is ready and prints one `name=value` line per endpoint, e.g.
`bootstrap.servers=127.0.0.1:PORT`. `status` prints the same lines (exit 0) or says it is not
running (exit 1). `down` stops it. The state file (pid + endpoints) lives in
`$KAFKASQL_LOCAL_STATE`, else `$XDG_RUNTIME_DIR/kafkasql_magic/local.json`, else
`~/.cache/kafkasql_magic/local.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kafkasql_magic.local.running import MARK, alive, read_state, running_state, state_path

def _print_endpoints(endpoints: dict) -> None:
    for name, value in endpoints.items():
        print(f"{name}={value}")


def _write_state(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".local-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
    os.replace(tmp, path)


# ------------------------------------------------------------------------ commands
def cmd_up(path: Path, timeout: float) -> int:
    state = running_state(path)
    if state:
        _print_endpoints(state["endpoints"])
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    log_path = path.with_suffix(".log")
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", MARK, "_serve", "--state", str(path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, env=env, cwd="/",
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(path)
        if state and state.get("pid") == proc.pid:
            _print_endpoints(state["endpoints"])
            return 0
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        proc.terminate()
    try:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
    except OSError:
        tail = ""
    print(f"The local stack did not start (log: {log_path})\n{tail}", file=sys.stderr)
    return 1


def cmd_status(path: Path) -> int:
    state = running_state(path)
    if not state:
        print("The local stack is not running.")
        return 1
    _print_endpoints(state["endpoints"])
    return 0


def cmd_down(path: Path, timeout: float) -> int:
    state = read_state(path)
    pid = state.get("pid") if state else None
    if not isinstance(pid, int) or not alive(pid):
        if state:
            path.unlink(missing_ok=True)
        print("The local stack is not running.")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)  # its broker dies with it (PDEATHSIG)
    state = read_state(path)
    if state and state.get("pid") == pid:
        path.unlink(missing_ok=True)
    print("The local stack is stopped.")
    return 0


def cmd_serve(path: Path) -> int:
    """Run the stack in this process until SIGTERM/SIGINT (what `up` launches)."""
    from kafkasql_magic.local.stack import LocalStack

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stack = LocalStack().start()
    try:
        _write_state(path, {"pid": os.getpid(), "endpoints": stack.endpoints,
                            "started": time.time(), "broker_log": str(stack.broker.log_path)})
        print(f"kafkasql_magic local stack up: {stack.endpoints}", flush=True)
        while not stop.wait(1.0):
            if not stack.is_running():
                print("a service of the local stack exited", flush=True)
                break
    finally:
        stack.stop()
        state = read_state(path)
        if state and state.get("pid") == os.getpid():
            path.unlink(missing_ok=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kafkasql_magic.local",
                                 description="The embedded Kafka stack for kafkasql_magic.")
    ap.add_argument("command", choices=["up", "down", "status", "_serve"])
    ap.add_argument("--state", help="state file (default: %(default)s)", default=None)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args(argv)
    path = Path(args.state) if args.state else state_path()
    if args.command == "up":
        return cmd_up(path, args.timeout)
    if args.command == "status":
        return cmd_status(path)
    if args.command == "down":
        return cmd_down(path, args.timeout)
    return cmd_serve(path)


if __name__ == "__main__":
    sys.exit(main())
