"""The two keyed steps of an aggregation over a TABLE, StatefulProcessors for `transformWithState`
(`build_spark.py` chains them in one streaming query).

`TableRows`, keyed by the table's key: a ValueState holds the row's counted version (its group
key and aggregate arguments). Per key and micro-batch it reads that once, turns the batch's
changes (in offset order) into group steps (`rules.moves`: the old version retracted, the new one
added) and writes it back (or clears it) once. Without `each_change` only the key's last change
of the batch counts, as ksqlDB's record cache keeps a table's latest row per key.

`GroupChanges`, keyed by the group key: a ValueState holds the group's accumulators, member count
and latest record time. Per group and micro-batch it reads them once, applies the steps in input
order (`rules.Group`) and writes them back once (cleared when no member is left). It emits the
group's row once per micro-batch, or with `each_change` (ksqlDB's record cache off) after every
step a group shows, with the step's place in input order so that a sink writes them in order.

Neither imports the engine's build, so that Spark's Python workers unpickle them without the
planner.
"""

from __future__ import annotations

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..aggregate.accumulators import undoable
from ..aggregate.keyed_spark import _BITS, EPOCH, MICROSECOND, accumulator_states, conform, from_state, micros, to_state
from .rules import Group, change_order, moves

#: Columns of a group step, between the steps (besides the group keys and arguments).
SIGN, STEP_ORDER = "m_sign", "m_order"


class TableRows(StatefulProcessor):
    """A table key's counted version in one ValueState: one get and one update per key and batch."""

    def __init__(self, version: T.StructType, keys: int, positions: list[int], present: int, partition: int,
                 order: int, time: int, headers: int, names: list[str], each_change: bool):
        self.version, self.keys, self.positions = version, keys, positions  # group keys, then the arguments
        self.present, self.partition, self.order, self.time, self.headers = present, partition, order, time, headers
        self.each_change = each_change
        self.names = names  # the output: the version's fields, then sign, step order, partition, time, headers

    def init(self, handle) -> None:
        self.state = handle.getValueState("version", self.version)
        self.out = Row(*self.names)

    def handleInputRows(self, key, rows, timerValues):
        records = sorted(rows, key=lambda r: (r[self.partition], r[self.order]))
        if not self.each_change:
            records = records[-1:]
        stored = self.state.get()
        changes = [(bool(r[self.present]), tuple(r[p] for p in self.positions), r) for r in records]
        steps, kept = moves(None if stored is None else tuple(stored), changes, self.keys)
        for sign, version, record, step, shown in steps:
            yield self.out(*version, sign if shown else 0, change_order(record[self.order], step),
                           record[self.partition], record[self.time], record[self.headers])
        if kept is None:
            self.state.clear()
        else:
            self.state.update(kept)

    def close(self) -> None:
        pass


class GroupChanges(StatefulProcessor):
    """A group's accumulators in one ValueState: one get and one update per group and batch.

    A step's sign 0 is a retraction shown with the addition after it (`rules.moves`): -1 applied,
    nothing emitted."""

    def __init__(self, specs, sign: int, order: int, partition: int, time: int, headers: int,
                 names: list[str], each_change: bool, keeps_emptied: bool):
        self.specs = specs  # (aggregate name, argument positions, argument type, result type)
        self.sign, self.order, self.partition, self.time, self.headers = sign, order, partition, time, headers
        self.names, self.each_change, self.keeps_emptied = names, each_change, keeps_emptied

    def init(self, handle) -> None:
        # a SUM wraps at its result's width (ksqlDB's SUM of INT is an INT, Materialize's a bigint)
        self.accumulators, fields = accumulator_states(self.specs, lambda name, nargs, arg_type, result: undoable(
            name, nargs, _BITS.get(type(result if name == "SUM" else arg_type))))
        own = [T.StructField("rt", T.LongType()), T.StructField("n", T.LongType())]
        self.state = handle.getValueState("aggregates", T.StructType([*own, *fields]))
        self.out = Row(*self.names)

    def handleInputRows(self, key, rows, timerValues):
        steps = sorted(rows, key=lambda r: (r[self.partition], r[self.order]))
        time, group = self._unpack(self.state.get())
        last = None
        for step in steps:
            when = micros(step[self.time])
            time = when if time is None or (when is not None and when > time) else time
            group.apply(1 if step[self.sign] > 0 else -1, [tuple(step[p] for p in pos) for _, pos, _, _ in self.accumulators])
            if step[self.sign] != 0:
                last = step
                if self.each_change:
                    yield self._row(key, group, time, step)
        if last is not None and not self.each_change:
            yield self._row(key, group, time, last)
        if group.members == 0:
            self.state.clear()
        else:
            self.state.update(self._pack(time, group))

    def _row(self, key, group: Group, time, step) -> Row:
        values = [conform(v, result) for v, (_, _, _, result) in zip(group.results(), self.accumulators)]
        deleted = group.members == 0 and not self.keeps_emptied
        return self.out(*key, *values, group.members, None if time is None else EPOCH + time * MICROSECOND,
                        step[self.headers], step[self.partition], step[self.order], deleted)

    def _unpack(self, stored) -> tuple:
        accumulators = [acc for acc, *_ in self.accumulators]
        if stored is None:
            return None, Group(accumulators)
        at, states = 2, []
        for _, _, types_, _ in self.accumulators:
            states.append(tuple(from_state(v, t) for v, t in zip(stored[at:at + len(types_)], types_)))
            at += len(types_)
        return stored[0], Group(accumulators, states, stored[1])

    def _pack(self, time, group: Group) -> tuple:
        values = [time, group.members]
        for (_, _, types_, _), state in zip(self.accumulators, group.states):
            values += [to_state(conform(v, t), t) for v, t in zip(state, types_)]
        return tuple(values)

    def close(self) -> None:
        pass
