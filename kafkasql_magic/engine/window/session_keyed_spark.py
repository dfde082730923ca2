"""The keyed state of a SESSION windowed aggregation: step B after the TUMBLING/HOPPING windows'
`StreamTime` (`sessions_spark.py` builds the frame around them), with ksqlDB's (Kafka Streams')
semantics (`session_rules.py`).

`SessionAggregates`, keyed by the group key, keeps a key's open sessions in one ValueState: each session's bounds, its
accumulators, and the headers and place of its latest record; and, for an aggregate whose
accumulator cannot merge (LATEST_BY_OFFSET, EARLIEST_BY_OFFSET), the arguments of the session's
records with their arrival number (a per-key count, also kept), so that a merged session adds
them again in arrival order. A record joins the sessions within the gap of it: merged (ksqlDB's
UDAF `merge`, in the sessions' end order, then the record added), the merged ones removed with
a tombstone each (key, WINDOWSTART, WINDOWEND, the rest NULL). A record whose session would end
before stream time minus gap and grace is late: an error row with Kafka Streams' log line. Each
session registers an event-time timer at that bound; when the watermark passes it the session
leaves the state (EMIT FINAL: its one row comes out then). EMIT CHANGES writes each change
after every record (`each`: ksqlDB's record cache off), or once per batch: the sessions a batch
changed, and a tombstone for each session a batch began with and removed. A row's record time
is its session's end, as Kafka Streams forwards a session. This module imports nothing of the
engine's build, so that Spark's Python workers unpickle the processor without importing the planner.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..aggregate.keyed_spark import EPOCH, accumulator_states, conform, from_state, stored_type, to_state
from .session_rules import closes_at, expired_message, found, is_late, merged_bounds

# a session in memory: [start, end, headers, partition, offset, accumulator states, members per
# accumulator without merge (lists of (arrival number, arguments)), or None for one with merge]
START, END, RH, P, O, STATES, MEMBERS = range(7)


class SessionAggregates(StatefulProcessor):
    """One group's open sessions in one ValueState."""

    def __init__(self, specs, argument_types, at: dict[str, int], headers_type: T.DataType,
                 timing: tuple[int, int], final: bool, each: bool, names: list[str]):
        self.specs = specs  # (aggregate name, argument positions, argument type, result type)
        self.argument_types = argument_types  # per spec, each argument's type
        self.at, self.headers_type, self.final, self.each, self.names = at, headers_type, final, each, names
        self.gap, self.grace = timing

    def init(self, handle) -> None:
        self.handle = handle
        self.accumulators, accumulated = accumulator_states(self.specs)
        members = [T.StructField(f"m{i}", T.ArrayType(T.StructType(
            [T.StructField("n", T.LongType()), *[T.StructField(f"v{k}", stored_type(t)) for k, t in enumerate(types_)]]),
            False))
            for i, ((acc, *_), types_) in enumerate(zip(self.accumulators, self.argument_types)) if acc.merge is None]
        fields = [T.StructField("start", T.LongType()), T.StructField("end", T.LongType()),
                  T.StructField("rh", self.headers_type), T.StructField("p", T.IntegerType()),
                  T.StructField("o", T.LongType()), *accumulated, *members]
        self.state = handle.getValueState("sessions", T.StructType([
            T.StructField("n", T.LongType()), T.StructField("s", T.ArrayType(T.StructType(fields), False))]))
        self.out = Row(*self.names)

    def handleInputRows(self, key, rows, timerValues):
        at = self.at
        arrivals, sessions = self._unpack(self.state.get())
        began = {(s[START], s[END]) for s in sessions}
        changed, removed = {}, {}  # bounds -> (session, or the record that removed it) for a batch's rows
        for record in sorted(rows, key=lambda r: (r[at["partition"]], r[at["order"]])):
            time, stream = record[at["t"]], record[at["stream"]]
            if time is None:
                continue
            near = found(sessions, lambda s: (s[START], s[END]), time, self.gap, self.grace, stream)
            start, end = merged_bounds(time, [(s[START], s[END]) for s in near])
            if is_late(end, self.gap, self.grace, stream):
                yield self._late(key, record, time, start, end, stream)
                continue
            arrivals += 1
            if (start, end) != (time, time):  # Kafka Streams removes every merged session, a tombstone each
                for old in near:
                    if self.each and not self.final:
                        yield self._tombstone(key, old, record)
                    elif (old[START], old[END]) in began:
                        removed[(old[START], old[END])] = record
                    changed.pop((old[START], old[END]), None)
            sessions = [s for s in sessions if not any(s is old for old in near) and (s[START], s[END]) != (start, end)]
            session = self._merged(near, start, end, record, arrivals)
            sessions.append(session)
            self.handle.registerTimer(closes_at(end, self.gap, self.grace))
            if self.each and not self.final:
                yield self._row(key, session)
            else:
                changed[(start, end)] = session
        if not self.final and not self.each:
            for bounds, record in sorted(removed.items()):
                if bounds not in changed:
                    yield self._tombstone(key, [*bounds, None, None, None, None, None], record)
            for bounds in sorted(changed):
                yield self._row(key, changed[bounds])
        self.state.update(self._pack(arrivals, sessions))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        arrivals, sessions = self._unpack(self.state.get())
        kept = []
        for session in sorted(sessions, key=lambda s: (s[END], s[START])):
            if not is_late(session[END], self.gap, self.grace, watermark):
                kept.append(session)
            elif self.final:
                yield self._row(key, session)
        if kept:
            self.state.update(self._pack(arrivals, kept))
        else:
            self.state.clear()

    def _merged(self, near: list, start: int, end: int, record, arrivals: int) -> list:
        """The session a record makes with the sessions `near` it (in their end order)."""
        at = self.at
        states, members = [], []
        for index, (acc, positions, _, _) in enumerate(self.accumulators):
            args = tuple(record[p] for p in positions)
            if acc.merge is None:  # its records' arguments again, in arrival order
                joined = sorted([m for old in near for m in old[MEMBERS][index]] + [(arrivals, args)])
                state = acc.initial
                for _, member in joined:
                    state = acc.add(state, member)
                states.append(state)
                members.append(joined)
                continue
            state = acc.initial
            for old in near:
                state = acc.merge(state, old[STATES][index], args)
            states.append(acc.add(state, args))
            members.append(None)
        return [start, end, record[at["rh"]], record[at["partition"]], record[at["order"]], states, members]

    def _row(self, key, session: list):
        values = [conform(acc.result(state), result)
                  for (acc, _, _, result), state in zip(self.accumulators, session[STATES])]
        return self.out(*key, session[START], session[END], *values, _time(session[END]), session[RH], session[P],
                        session[O], None, None, False)

    def _tombstone(self, key, session: list, record):
        at = self.at
        return self.out(*key, session[START], session[END], *[None] * len(self.accumulators), _time(session[END]),
                        record[at["rh"]], record[at["partition"]], record[at["order"]], None, None, True)

    def _late(self, key, record, time: int, start: int, end: int, stream: int):
        at = self.at
        topic, partition, offset = record[at["topic"]], record[at["partition"]], record[at["order"]]
        message = expired_message(topic, partition, offset, time, start, end, self.gap, self.grace, stream)
        return self.out(*key, start, end, *[None] * len(self.accumulators), None, None, partition, offset, message,
                        topic, False)

    def _unpack(self, stored) -> tuple[int, list]:
        if stored is None:
            return 0, []
        sessions = []
        for packed in stored[1]:
            at, states, members = 5, [], []
            for acc, _, types_, _ in self.accumulators:
                states.append(tuple(from_state(v, t) for v, t in zip(packed[at:at + len(types_)], types_)))
                at += len(types_)
            for (acc, *_), types_ in zip(self.accumulators, self.argument_types):
                if acc.merge is None:
                    members.append([(m[0], tuple(from_state(v, t) for v, t in zip(m[1:], types_))) for m in packed[at]])
                    at += 1
                else:
                    members.append(None)
            sessions.append([packed[0], packed[1], packed[2], packed[3], packed[4], states, members])
        return stored[0], sessions

    def _pack(self, arrivals: int, sessions: list) -> tuple:
        packed = []
        for session in sorted(sessions, key=lambda s: (s[END], s[START])):
            values = [session[START], session[END], session[RH], session[P], session[O]]
            for (_, _, types_, _), state in zip(self.accumulators, session[STATES]):
                values += [to_state(conform(v, t), t) for v, t in zip(state, types_)]
            for members, types_ in zip(session[MEMBERS], self.argument_types):
                if members is not None:
                    values.append([(n, *[to_state(conform(v, t), t) for v, t in zip(args, types_)])
                                   for n, args in members])
            packed.append(tuple(values))
        return (arrivals, packed)

    def close(self) -> None:
        pass


def _time(ms: int):
    return EPOCH + timedelta(milliseconds=ms)
