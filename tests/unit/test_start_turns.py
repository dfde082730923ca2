"""Queries start one after another: the next waits until the one before has its sources up
(Spark gives a Python streaming source's driver worker a fixed 10 s to connect back, and
starts that overlap on a loaded machine missed it). No Spark session: fake query handles."""

from __future__ import annotations

import threading
import time

from kafkasql_magic import runtime
from kafkasql_magic.runtime import _StartTurns, sources_up


class FakeQuery:
    """A StreamingQuery whose sources come up when `up` is set."""

    def __init__(self, name: str):
        self.name = name
        self.up = threading.Event()
        self.isActive = True

    @property
    def status(self) -> dict:
        return {"message": "Waiting for data to arrive" if self.up.is_set() else "Initializing sources"}


def test_a_query_starts_when_the_one_before_has_its_sources_up():
    events: list[str] = []
    turns = _StartTurns()
    first = FakeQuery("first")

    def start(query):
        def go():
            events.append(f"start {query.name}")
            return query
        return go

    assert turns(start(first)) is first
    second = FakeQuery("second")
    done = threading.Event()
    threading.Thread(target=lambda: (turns(start(second)), done.set()), daemon=True).start()
    time.sleep(0.5)
    assert events == ["start first"], "the second query started while the first's sources were initialising"
    events.append("first up")
    first.up.set()
    assert done.wait(5)
    assert events == ["start first", "first up", "start second"]


def test_a_single_start_never_waits():
    turns = _StartTurns()
    began = time.monotonic()
    turns(lambda: FakeQuery("only"))
    assert time.monotonic() - began < 0.5


def test_the_wait_ends_when_the_query_before_stopped_or_after_the_timeout(monkeypatch):
    stopped = FakeQuery("stopped")
    stopped.isActive = False
    assert sources_up(stopped, 5) is False
    stuck = FakeQuery("stuck")
    began = time.monotonic()
    assert sources_up(stuck, 0.3) is False
    assert 0.3 <= time.monotonic() - began < 2
    monkeypatch.setattr(runtime, "SOURCES_UP_WAIT", 0.3)
    turns = _StartTurns()
    turns(lambda: stuck)
    began = time.monotonic()
    turns(lambda: FakeQuery("next"))
    assert time.monotonic() - began < 2, "a query whose sources never came up held the next start for ever"
