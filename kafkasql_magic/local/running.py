"""The detached embedded stack's state file (pid + endpoints): where it is and whether the
stack it names still runs. Read by the CLI (`__main__`) and by the magic, which finds a stack
started by `python -m kafkasql_magic.local up`."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

MARK = "kafkasql_magic.local"


def state_path() -> Path:
    explicit = os.environ.get("KAFKASQL_LOCAL_STATE")
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and os.path.isdir(runtime) else Path.home() / ".cache"
    return base / "kafkasql_magic" / "local.json"


def read_state(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():  # guard against a recycled pid
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if not text.strip():
                return False  # zombie
            return MARK in text
        except OSError:
            return False
    return True


def _answers(bootstrap: str, timeout: float = 1.0) -> bool:
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def running_state(path: Path | None = None) -> dict | None:
    """The state of a running stack, or None (a stale state file is removed)."""
    path = path or state_path()
    state = read_state(path)
    if not state:
        return None
    pid = state.get("pid")
    eps = state.get("endpoints") or {}
    if isinstance(pid, int) and alive(pid) and all(
            _answers(v) for k, v in eps.items() if k == "bootstrap.servers"):
        return state
    if isinstance(pid, int) and not alive(pid):
        try:
            path.unlink()
        except OSError:
            pass
    return None
