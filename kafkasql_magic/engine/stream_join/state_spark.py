"""The keyed state of a stream-stream join: two StatefulProcessors for `transformWithState`,
chained (`join_spark.py` builds the frame around them).

`SideStreamTime`, keyed by (side, input partition), gives each record its own side's stream time
(`__stream`: the largest record time of that side's partition so far, the record's own included,
in offset order), kept in a ValueState from batch to batch; a pandas step
(`transformWithStateInPandas`), so that each record crosses into Python as Arrow and pandas
columns rather than as a Row (bench/README.md, "A pandas keyed step"). `JoinState`, keyed by
the join key, keeps both sides' records of the key in one ValueState (each with its time, where it was, whether
it met a match, and its columns as a struct), processes a micro-batch's records in time order as
Kafka Streams processes its inputs, and emits each joined pair and, per `rules.py`, an outer
side's unmatched records NULL-padded. Event-time timers (the watermark is the largest record time
of both inputs' batches before) emit the unmatched records whose window and grace passed and drop
the records no record can meet any more. This module imports nothing of the engine's build, so
that Spark's Python workers unpickle the processors without importing the planner.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .rules import LEFT, RIGHT, closes_at, expires_at, is_late, joins, unmatched_due


class SideStreamTime(StatefulProcessor):
    """Each record of one side's input partition with that side's stream time (`__stream`, ms), a
    pandas step: the records sorted by offset, the running largest record time from the one
    kept (a record without a time meets the stream time before it, NULL before any)."""

    def __init__(self, order: str, time: str, stream: str):
        self.order, self.time, self.stream = order, time, stream

    def init(self, handle) -> None:
        self.state = handle.getValueState("stream", T.StructType([T.StructField("t", T.LongType())]))

    def handleInputRows(self, key, rows, timerValues):
        stored = self.state.get()
        records = pd.concat(list(rows), ignore_index=True).sort_values(self.order, kind="stable")
        running = records[self.time].astype("float64").cummax().ffill()
        if stored is not None:
            running = running.clip(lower=stored[0]).fillna(stored[0])
        records[self.stream] = running.astype("Int64")
        if running.notna().any():
            self.state.update((int(running.iloc[-1]),))
        yield records

    def close(self) -> None:
        pass


class JoinState(StatefulProcessor):
    """One join key's records of both sides in one ValueState."""

    def __init__(self, at: dict[str, int], row_types: tuple[T.StructType, T.StructType], outer: tuple[bool, bool],
                 within: tuple[int, int], grace: int | None, names: list[str]):
        self.at = at  # input position of: side, partition, offset, t, stream, left, right
        self.row_types, self.outer, self.within, self.grace, self.names = row_types, outer, within, grace, names

    def init(self, handle) -> None:
        self.handle = handle
        stores = [T.StructField(name, T.ArrayType(T.StructType([
            T.StructField("t", T.LongType()), T.StructField("p", T.IntegerType()), T.StructField("o", T.LongType()),
            T.StructField("m", T.BooleanType()), T.StructField("row", row_type)]), False))
            for name, row_type in zip(("l", "r"), self.row_types)]
        self.state = handle.getValueState("records", T.StructType(stores))
        self.out = Row(*self.names)
        self.widths = [len(t.fields) for t in self.row_types]

    def handleInputRows(self, key, rows, timerValues):
        at = self.at
        stores = self._unpack(self.state.get())
        stream = timerValues.getCurrentWatermarkInMs()
        ordered = sorted(rows, key=lambda r: (r[at["t"]] if r[at["t"]] is not None else -1, r[at["side"]],
                                              r[at["partition"]], r[at["offset"]]))
        for record in ordered:
            side, time = record[at["side"]], record[at["t"]]
            row = record[at["left"] if side == LEFT else at["right"]]
            if key[0] is None or time is None:  # a NULL join key (KIP-962) meets nothing
                if self.outer[side]:
                    yield self._row(side, row, None)
                continue
            if is_late(time, record[at["stream"]], self.within, self.grace):
                continue
            stream = max(stream, time)
            matched = False
            for entry in stores[1 - side]:
                if joins(side, time, entry[0], self.within):
                    entry[3] = matched = True
                    yield self._row(side, row, entry[4])
            if self.outer[side] and not matched and self.grace is None:
                matched = True
                yield self._row(side, row, None)
            stores[side].append([time, record[at["partition"]], record[at["offset"]], matched, row])
            if self.outer[side] and self.grace is not None:
                self.handle.registerTimer(closes_at(side, time, self.within, self.grace) + 1)
            self.handle.registerTimer(expires_at(time, self.within, self.grace) + 1)
        yield from self._settle(stores, stream)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        stores = self._unpack(self.state.get())
        yield from self._settle(stores, timerValues.getCurrentWatermarkInMs())

    def _settle(self, stores: list[list], stream: int):
        """The unmatched records due at stream time `stream`, NULL-padded; the records no record
        can meet any more leave the state."""
        for side in (LEFT, RIGHT):
            if not self.outer[side]:
                continue
            for entry in stores[side]:
                if not entry[3] and unmatched_due(side, entry[0], self.within, self.grace, stream):
                    entry[3] = True
                    yield self._row(side, entry[4], None)
        kept = [[e for e in store if expires_at(e[0], self.within, self.grace) >= stream] for store in stores]
        if kept[0] or kept[1]:
            self.state.update(tuple([tuple(e) for e in store] for store in kept))
        else:
            self.state.clear()

    def _row(self, side: int, row, other):
        left, right = (row, other) if side == LEFT else (other, row)
        return self.out(*_values(left, self.widths[0]), *_values(right, self.widths[1]))

    @staticmethod
    def _unpack(stored) -> list[list]:
        if stored is None:
            return [[], []]
        return [[list(e) for e in (store or ())] for store in stored]

    def close(self) -> None:
        pass


def _values(row, width: int) -> list:
    """A side's columns from its struct (a dict or a Row, as Spark hands it over), NULLs for none."""
    if row is None:
        return [None] * width
    return list(row.values()) if isinstance(row, dict) else list(row)
