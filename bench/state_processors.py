"""The stateful processors `bench/state_probe.py` measures (a module of their own, so that Spark's
Python workers import them by name). Each times its own state calls (wall clock, and the Python
thread's CPU) and, at close() (once per micro-batch and partition), appends
`calls seconds cpu_seconds handler_calls` to a file named after its variant."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor

OUT = "k LONG, n LONG, s LONG"
ROW_OUT = OUT
SUM = "n LONG, s LONG"


def apply_in_pandas_count(key, frames, state):
    n, s = state.get if state.exists else (0, 0)
    for frame in frames:
        n, s = n + len(frame), s + int(frame["v"].sum())
    state.update((n, s))
    yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})


class Timed(StatefulProcessor):
    """Counts and times state calls; `kind` names the state variable it declares."""

    kind = "none"

    def __init__(self, timing_dir: str, variant: str):
        self.timing_dir, self.variant = timing_dir, variant

    def init(self, handle):
        self.calls, self.seconds, self.cpu, self.keys = 0, 0.0, 0.0, 0
        if self.kind in ("value",):
            self.state = handle.getValueState("total", SUM)
        elif self.kind == "list":
            self.state = handle.getListState("values", "v LONG")
        elif self.kind in ("map", "bucket"):
            self.state = handle.getMapState("totals", "u LONG" if self.kind == "bucket" else "u STRING", SUM)

    def timed(self, call, *args):
        t0, c0 = time.perf_counter(), time.thread_time()
        result = call(*args)
        self.seconds += time.perf_counter() - t0
        self.cpu += time.thread_time() - c0
        self.calls += 1
        return result

    def fold(self, key, n, s):
        """The state calls of one key given its batch's count and sum; returns the total."""
        if self.kind == "value":
            old = self.timed(self.state.get)
            n, s = (n + old[0], s + old[1]) if old else (n, s)
            self.timed(self.state.update, (n, s))
        elif self.kind == "map":
            old = self.timed(self.state.getValue, ("total",))
            n, s = (n + old[0], s + old[1]) if old else (n, s)
            self.timed(self.state.updateValue, ("total",), (n, s))
        return n, s

    def close(self):
        with open(Path(self.timing_dir) / f"{self.variant}.{os.getpid()}", "a") as f:
            f.write(f"{self.calls} {self.seconds} {self.cpu} {self.keys}\n")


class PandasProcessor(Timed):
    def handleInputRows(self, key, rows, timerValues):
        self.keys += 1
        frames = list(rows)
        if self.kind == "list":
            values = [(int(v),) for frame in frames for v in frame["v"]]
            self.timed(self.state.appendList, values)
        n = sum(len(f) for f in frames)
        s = sum(int(f["v"].sum()) for f in frames)
        n, s = self.fold(key, n, s)
        yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})


class RowProcessor(Timed):
    def handleInputRows(self, key, rows, timerValues):
        self.keys += 1
        n = s = 0
        values = []
        for row in rows:
            n, s = n + 1, s + row.v
            if self.kind == "list":
                values.append((row.v,))
        if self.kind == "list":
            self.timed(self.state.appendList, values)
        n, s = self.fold(key, n, s)
        yield Row(k=key[0], n=n, s=s)


class BucketProcessor(Timed):
    """Keys meet in hash buckets: one handler call per bucket, pandas aggregates the bucket's
    keys, then a MapState entry per key (getValue + updateValue)."""

    kind = "bucket"

    def handleInputRows(self, key, rows, timerValues):
        self.keys += 1
        frame = pd.concat(list(rows), ignore_index=True)
        sums = frame.groupby("k")["v"].agg(["count", "sum"])
        out_n, out_s = [], []
        for k, n, s in zip(sums.index.tolist(), sums["count"].tolist(), sums["sum"].tolist()):
            old = self.timed(self.state.getValue, (k,))
            n, s = (n + old[0], s + old[1]) if old else (n, s)
            self.timed(self.state.updateValue, (k,), (n, s))
            out_n.append(n)
            out_s.append(s)
        yield pd.DataFrame({"k": sums.index.to_numpy(), "n": out_n, "s": out_s})


def _kind(base, kind):
    name = base.__name__.replace("Processor", kind.title())
    return type(name, (base,), {"kind": kind, "__module__": __name__, "__qualname__": name})


PandasNone, PandasValue, PandasList, PandasMap = (_kind(PandasProcessor, k) for k in ("none", "value", "list", "map"))
RowNone, RowValue, RowList, RowMap = (_kind(RowProcessor, k) for k in ("none", "value", "list", "map"))
PROCESSORS = {("pandas", "none"): PandasNone, ("pandas", "value"): PandasValue, ("pandas", "list"): PandasList,
              ("pandas", "map"): PandasMap, ("row", "none"): RowNone, ("row", "value"): RowValue,
              ("row", "list"): RowList, ("row", "map"): RowMap, ("pandas", "bucket"): BucketProcessor}


class TimerProcessor(StatefulProcessor):
    """A sum per key; with timers, an event-time timer 10 s after the key's first row, which
    emits the key and clears its state."""

    def __init__(self, timers: bool):
        self.timers = timers

    def init(self, handle):
        self.handle = handle
        self.state = handle.getValueState("sum", "s LONG")

    def handleInputRows(self, key, rows, timerValues):
        frames = list(rows)
        old = self.state.get()
        self.state.update(((old[0] if old else 0) + sum(int(f["v"].sum()) for f in frames),))
        if self.timers and old is None:
            latest = max(f["ts"].max() for f in frames)
            self.handle.registerTimer(int(latest.value // 1_000_000) + 10_000)
        return iter([])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        self.state.clear()
        yield pd.DataFrame({"k": [key[0]], "kind": ["timer"]})

    def close(self):
        pass


class TtlProcessor(StatefulProcessor):
    """Says whether the key's state was there ("found") or not ("missing"), then sets it."""

    def __init__(self, ttl_ms):
        self.ttl_ms = ttl_ms

    def init(self, handle):
        self.state = handle.getValueState("seen", "x LONG", self.ttl_ms)

    def handleInputRows(self, key, rows, timerValues):
        for _ in rows:
            pass
        found = self.state.exists()
        self.state.update((1,))
        yield pd.DataFrame({"k": [key[0]], "kind": ["found" if found else "missing"]})

    def close(self):
        pass
