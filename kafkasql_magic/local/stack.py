"""The embedded stack: a list of services started in order and stopped in reverse.

Each service ("component") has `start(upstream)` (upstream = the endpoints of the services
started before it, e.g. a schema registry gets `bootstrap.servers`), `stop()`, `is_running()`
and `endpoints` (a dict of client settings such as `{"bootstrap.servers": "127.0.0.1:PORT"}`).
Adding a service is one more factory in `COMPONENTS`.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable

from kafkasql_magic.local.broker import Broker
from kafkasql_magic.registry import RegistryServer

# Factories of the default services, in start order: the registry keeps its schemas in the
# broker's `_schemas` topic, so it starts second.
COMPONENTS: list[Callable[[], object]] = [Broker, RegistryServer]


class LocalStack:
    """The embedded services for demos, tutorials and tests.

    >>> with LocalStack() as stack:
    ...     stack.bootstrap_servers        # '127.0.0.1:PORT'
    """

    def __init__(self, components: Iterable[object] | None = None):
        self.components = list(components) if components is not None else [f() for f in COMPONENTS]
        self._lock = threading.RLock()

    def start(self) -> "LocalStack":
        with self._lock:
            started = []
            try:
                for comp in self.components:
                    comp.start(self._endpoints_of(started))
                    started.append(comp)
            except BaseException:
                for comp in reversed(started):
                    try:
                        comp.stop()
                    except Exception:
                        pass
                raise
            return self

    def stop(self) -> None:
        with self._lock:
            first_error = None
            for comp in reversed(self.components):
                try:
                    comp.stop()
                except Exception as exc:  # keep stopping the others
                    first_error = first_error or exc
            if first_error is not None:
                raise first_error

    def is_running(self) -> bool:
        return all(comp.is_running() for comp in self.components)

    @staticmethod
    def _endpoints_of(components) -> dict[str, str]:
        out: dict[str, str] = {}
        for comp in components:
            out.update(comp.endpoints)
        return out

    @property
    def endpoints(self) -> dict[str, str]:
        """Client settings of every service, e.g. {"bootstrap.servers": "127.0.0.1:PORT"}."""
        return self._endpoints_of(self.components)

    def component(self, name: str):
        for comp in self.components:
            if getattr(comp, "name", None) == name:
                return comp
        raise KeyError(name)

    @property
    def broker(self) -> Broker:
        return self.component("broker")

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def __enter__(self) -> "LocalStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        if not self.is_running():
            return "<LocalStack stopped>"
        eps = " ".join(f"{k}={v}" for k, v in self.endpoints.items())
        return f"<LocalStack running {eps}>"


_DEFAULT: LocalStack | None = None
_DEFAULT_LOCK = threading.Lock()


def start_default() -> LocalStack:
    """Start the process-wide stack (for `%kstream_local start`); idempotent."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is not None and _DEFAULT.is_running():
            return _DEFAULT
        if _DEFAULT is not None:  # half-dead (e.g. the broker was killed): clean up first
            try:
                _DEFAULT.stop()
            except Exception:
                pass
        _DEFAULT = LocalStack().start()
        return _DEFAULT


def stop_default() -> bool:
    """Stop the process-wide stack; False if none was running."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        stack, _DEFAULT = _DEFAULT, None
    if stack is None:
        return False
    stack.stop()
    return True


def default() -> LocalStack | None:
    """The running process-wide stack, or None."""
    stack = _DEFAULT
    return stack if stack is not None and stack.is_running() else None


def endpoints() -> dict[str, str] | None:
    """The endpoints of the embedded stack in use: this process's (`start_default()`), else one
    started with `python -m kafkasql_magic.local up` (Binder's start script runs it, and
    `%kstream_local start` attaches to it); None without either. Notebooks take their
    `bootstrap.servers` and `schema.registry.url` from here."""
    from kafkasql_magic.local.running import running_state

    running = default()
    if running is not None:
        return running.endpoints
    state = running_state()
    return dict(state["endpoints"]) if state else None
