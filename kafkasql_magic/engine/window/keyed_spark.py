"""The keyed state of a TUMBLING or HOPPING windowed aggregation: two keyed steps, chained
(`windowed_spark.py` builds the frame around them).

`StreamTime`, keyed by the input partition, gives each record the stream time it meets: the
largest record time of the batches before (Spark's event-time watermark, which the build makes
exactly that) or of the records before it in its own partition (offset order). It keeps no
state of its own, and is a pandas step (`transformWithStateInPandas`): a handful of partitions
per micro-batch, each record's columns crossing as Arrow and pandas columns rather than as a
Row (bench/README.md, "A pandas keyed step"). `WindowAggregates`, a `transformWithState`
processor keyed by the group key, keeps the group's open windows in one ValueState (each
window's start, output record time and headers, accumulators): one get and one update per key
and micro-batch. A record whose window is closed at its stream time is late: it comes out as an
error row with Kafka Streams' log line. Each new window registers an event-time timer at its end
plus the grace period; when the watermark reaches it, the window leaves the state (EMIT FINAL:
its one row comes out then). EMIT CHANGES writes each window a batch changed once, or after
every record (`each`: ksqlDB's record cache off); with `each`, a row carries the window's values
before its record and whether the window had none (HAVING's tombstones need both; other rows say
none). This module imports nothing of the engine's build, so that Spark's Python workers
unpickle the processors without importing the planner.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..aggregate.keyed_spark import EPOCH, MICROSECOND, accumulator_states, conform, from_state, micros, to_state
from .rules import closes_at, expired_message, is_closed, window_starts


class StreamTime(StatefulProcessor):
    """Each record of one input partition with its stream time (`__stream`, ms), a pandas step:
    the partition's records sorted by offset, the running largest record time, never below the
    watermark (a record without a time meets the stream time before it)."""

    def __init__(self, order: str, time: str, stream: str):
        self.order, self.time, self.stream = order, time, stream

    def init(self, handle) -> None:
        pass

    def handleInputRows(self, key, rows, timerValues):
        watermark = timerValues.getCurrentWatermarkInMs()  # the largest record time of the batches before
        records = pd.concat(list(rows), ignore_index=True).sort_values(self.order, kind="stable")
        running = records[self.time].astype("float64").cummax().ffill().fillna(watermark)
        records[self.stream] = np.maximum(running.to_numpy(), watermark).astype("int64")
        yield records

    def close(self) -> None:
        pass


class WindowAggregates(StatefulProcessor):
    """One group's open windows in one ValueState."""

    def __init__(self, specs, at: dict[str, int], headers_type: T.DataType, timing: tuple[int, int, int],
                 final: bool, each: bool, names: list[str]):
        self.specs = specs  # (aggregate name, argument positions, argument type, result type)
        self.at = at  # input position of: partition, order, topic, rt, rh, t, stream
        self.headers_type, self.final, self.each, self.names = headers_type, final, each, names
        self.size, self.advance, self.grace = timing

    def init(self, handle) -> None:
        self.handle = handle
        self.accumulators, accumulated = accumulator_states(self.specs)
        fields = [T.StructField("start", T.LongType()), T.StructField("rt", T.LongType()),
                  T.StructField("rh", self.headers_type), T.StructField("p", T.IntegerType()),
                  T.StructField("o", T.LongType()), *accumulated]
        self.state = handle.getValueState("windows", T.StructType([T.StructField(
            "w", T.ArrayType(T.StructType(fields), False))]))
        self.out = Row(*self.names)

    def handleInputRows(self, key, rows, timerValues):
        at = self.at
        windows = self._unpack(self.state.get())
        changed: dict[int, None] = {}
        for record in sorted(rows, key=lambda r: (r[at["partition"]], r[at["order"]])):
            time, stream = record[at["t"]], record[at["stream"]]
            if time is None:
                continue
            for start in window_starts(time, self.size, self.advance):
                end = start + self.size
                if is_closed(end, self.grace, stream):
                    yield self._late(key, record, time, start, end, stream)
                    continue
                window = windows.get(start)
                before = None if window is None or not self.each else self._values(window)
                if window is None:
                    window = windows[start] = [None, None, None, None, [acc.initial for acc, *_ in self.accumulators]]
                    self.handle.registerTimer(closes_at(end, self.grace))
                self._add(window, record)
                if self.each and not self.final:
                    yield self._row(key, start, window, before)
                else:
                    changed[start] = None
        if not self.final and not self.each:
            for start in sorted(changed):
                yield self._row(key, start, windows[start], None)
        self.state.update(self._pack(windows))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        windows = self._unpack(self.state.get())
        for start in sorted(windows):
            if is_closed(start + self.size, self.grace, watermark):
                window = windows.pop(start)
                if self.final:
                    yield self._row(key, start, window, None)
        if windows:
            self.state.update(self._pack(windows))
        else:
            self.state.clear()

    def _add(self, window: list, record) -> None:
        at = self.at
        when = micros(record[at["rt"]])
        if window[0] is None or (when is not None and when > window[0]):
            window[0] = when  # Kafka Streams' rule: the latest time among the window's records
        window[1], window[2], window[3] = record[at["rh"]], record[at["partition"]], record[at["order"]]
        states = window[4]
        for index, (acc, positions, _, _) in enumerate(self.accumulators):
            states[index] = acc.add(states[index], tuple(record[p] for p in positions))

    def _values(self, window: list) -> list:
        return [conform(acc.result(state), result) for (acc, _, _, result), state in zip(self.accumulators, window[4])]

    def _row(self, key, start: int, window: list, before: list | None):
        """The window's row; `before`: its values before the change, None where it had none."""
        rt, rh, partition, offset, _ = window
        return self.out(*key, start, start + self.size, *self._values(window),
                        None if rt is None else EPOCH + rt * MICROSECOND, rh, partition, offset, None, None,
                        *(before or [None] * len(self.accumulators)), before is None)

    def _late(self, key, record, time: int, start: int, end: int, stream: int):
        at = self.at
        topic, partition, offset = record[at["topic"]], record[at["partition"]], record[at["order"]]
        message = expired_message(topic, partition, offset, time, start, end, self.grace, stream)
        return self.out(*key, start, end, *[None] * len(self.accumulators), None, None, partition, offset, message,
                        topic, *[None] * len(self.accumulators), True)

    def _unpack(self, stored) -> dict[int, list]:
        windows = {}
        for window in (stored[0] if stored is not None else ()):
            at, states = 5, []
            for _, _, types_, _ in self.accumulators:
                states.append(tuple(from_state(v, t) for v, t in zip(window[at:at + len(types_)], types_)))
                at += len(types_)
            windows[window[0]] = [window[1], window[2], window[3], window[4], states]
        return windows

    def _pack(self, windows: dict[int, list]) -> tuple:
        packed = []
        for start, (rt, rh, partition, offset, states) in sorted(windows.items()):
            values = [start, rt, rh, partition, offset]
            for (_, _, types_, _), state in zip(self.accumulators, states):
                values += [to_state(conform(v, t), t) for v, t in zip(state, types_)]
            packed.append(tuple(values))
        return (packed,)

    def close(self) -> None:
        pass
