"""The keyed state of a GROUP BY that writes one change per input record: a StatefulProcessor for
`transformWithState` keyed by the group key (`build_spark.py` builds the frame around it).

Per key and micro-batch the processor reads the group's accumulators once (one ValueState),
adds the batch's records in (partition, offset) order, emits after each one the group's values
`__agg{i}` with the output record's time `__rt` (Kafka Streams' rule: the latest time among the
group's records so far), headers `__rh` (the record's own, as it caused the change), the
record's partition and offset (a sink writes the changes in that order), the group's values
before the record `__prev__agg{i}` and whether the group had none (`__fresh`, HAVING's
tombstones need both), and writes the accumulators back once. This module imports nothing of the engine's build, so that
Spark's Python workers unpickle the processor without importing the planner.
"""

from __future__ import annotations

from datetime import datetime, time as dt_time, timedelta, timezone
from decimal import Decimal
from functools import lru_cache

from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ...types import with_time_as
from .accumulators import accumulator

_BITS = {T.IntegerType: 32, T.LongType: 64, T.ShortType: 32, T.ByteType: 32}
EPOCH, MICROSECOND = datetime(1970, 1, 1, tzinfo=timezone.utc), timedelta(microseconds=1)


def micros(when: datetime | None) -> int | None:
    """A record time as microseconds since the epoch (a time without a zone is UTC's, the session's)."""
    if when is None:
        return None
    return ((when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)) - EPOCH) // MICROSECOND


def state_type(kind: str, arg: T.DataType | None, result: T.DataType) -> T.DataType:
    """The Spark type of an accumulator's state field of `kind` (accumulators.py)."""
    if kind == "long":
        return T.LongType()
    if kind == "result":
        return result
    if kind == "args":
        return T.ArrayType(arg, True)
    if isinstance(arg, T.DecimalType):  # "sum": AVG's running sum
        return T.DecimalType(38, arg.scale)
    return T.LongType() if type(arg) in _BITS else T.DoubleType()


def stored_type(dtype: T.DataType) -> T.DataType:
    """The type a state field holds for values of `dtype`: a TIME (at any depth) as its
    microseconds of the day, since Spark's state store turns every state schema into an Avro
    schema, and its Avro schema converter has no TIME (IncompatibleSchemaException)."""
    return with_time_as(dtype, T.LongType())


def to_state(value, dtype: T.DataType):
    """A value of `dtype` as its state field holds it (`stored_type`)."""
    return _codec(dtype)[0](value)


def from_state(value, dtype: T.DataType):
    """A state field's value back as a value of `dtype`."""
    return _codec(dtype)[1](value)


def _same(value):
    return value


def _micros_of_day(value):
    return None if value is None else ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _time_of_day(value):
    if value is None:
        return None
    seconds, micros = divmod(value, 1_000_000)
    return dt_time(seconds // 3600, seconds // 60 % 60, seconds % 60, micros)


@lru_cache(maxsize=None)
def _codec(dtype: T.DataType):
    """(to the state, from the state) for values of `dtype`: the identity unless it holds a TIME."""
    if stored_type(dtype) == dtype:
        return _same, _same
    if isinstance(dtype, T.TimeType):
        return _micros_of_day, _time_of_day
    if isinstance(dtype, T.ArrayType):
        encode, decode = _codec(dtype.elementType)
        return ((lambda v: None if v is None else [encode(x) for x in v]),
                (lambda v: None if v is None else [decode(x) for x in v]))
    if isinstance(dtype, T.MapType):
        (ke, kd), (ve, vd) = _codec(dtype.keyType), _codec(dtype.valueType)
        return ((lambda v: None if v is None else {ke(k): ve(x) for k, x in dict(v).items()}),
                (lambda v: None if v is None else {kd(k): vd(x) for k, x in dict(v).items()}))
    codecs, row = [_codec(f.dataType) for f in dtype.fields], Row(*dtype.names)
    return ((lambda v: None if v is None else tuple(c[0](x) for c, x in zip(codecs, v))),
            (lambda v: None if v is None else row(*(c[1](x) for c, x in zip(codecs, v)))))


def conform(value, dtype: T.DataType):
    """A Python value as `dtype` takes it (a DECIMAL at its scale, a DOUBLE as a float)."""
    if value is None:
        return None
    if isinstance(dtype, T.DecimalType):
        return Decimal(value).quantize(Decimal(1).scaleb(-dtype.scale))
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return float(value)
    if type(dtype) in _BITS:
        return int(value)
    if isinstance(dtype, T.ArrayType):
        return [conform(v, dtype.elementType) for v in value]
    return value


def stream_accumulator(name: str, nargs: int, arg_type: T.DataType | None, result: T.DataType):
    """A stream aggregation's accumulator: a SUM of an integral argument wraps at its width."""
    return accumulator(name, nargs, _BITS.get(type(arg_type)))


def accumulator_states(specs, make=stream_accumulator) -> tuple[list, list[T.StructField]]:
    """Per spec (aggregate name, argument positions, argument type, result type) its accumulator,
    `make(name, nargs, arg_type, result)`, with its state fields' types; and those fields
    (`a{i}_{n}`), which a group's ValueState holds after its own."""
    accumulators, fields = [], []
    for i, (name, positions, arg_type, result) in enumerate(specs):
        acc = make(name, len(positions), arg_type, result)
        types_ = [state_type(kind, arg_type, result) for kind in acc.fields]
        fields += [T.StructField(f"a{i}_{n}", stored_type(t)) for n, t in enumerate(types_)]
        accumulators.append((acc, positions, types_, result))
    return accumulators, fields


class PerRecord(StatefulProcessor):
    """One group's accumulators in one ValueState: one get and one update per key and batch."""

    def __init__(self, specs, partition: int, order: int, time: int, headers: int, names: list[str]):
        self.specs = specs  # (aggregate name, argument positions, argument type, result type)
        self.partition, self.order, self.time, self.headers = partition, order, time, headers
        self.names = names

    def init(self, handle) -> None:
        self.accumulators, fields = accumulator_states(self.specs)
        rt = T.StructField("rt", T.LongType())  # the group's latest time, in µs
        self.state = handle.getValueState("aggregates", T.StructType([rt, *fields]))
        self.out = Row(*self.names)

    def handleInputRows(self, key, rows, timerValues):
        records = sorted(rows, key=lambda r: (r[self.partition], r[self.order]))
        stored = self.state.get()
        time, states = self._unpack(stored)
        values = None if stored is None else [conform(acc.result(state), result)
                                              for (acc, _, _, result), state in zip(self.accumulators, states)]
        for record in records:
            when = micros(record[self.time])
            time = when if time is None or (when is not None and when > time) else time
            before, values = values, []
            for index, (acc, positions, _, result) in enumerate(self.accumulators):
                states[index] = acc.add(states[index], tuple(record[p] for p in positions))
                values.append(conform(acc.result(states[index]), result))
            yield self.out(*key, *values, None if time is None else EPOCH + time * MICROSECOND, record[self.headers],
                           record[self.partition], record[self.order], *(before or [None] * len(values)),
                           before is None)
        self.state.update(self._pack(time, states))

    def _unpack(self, stored) -> tuple:
        if stored is None:
            return None, [acc.initial for acc, *_ in self.accumulators]
        at, states = 1, []
        for acc, _, types_, _ in self.accumulators:
            states.append(tuple(from_state(v, t) for v, t in zip(stored[at:at + len(types_)], types_)))
            at += len(types_)
        return stored[0], states

    def _pack(self, time, states) -> tuple:
        values = [time]
        for (_, _, types_, _), state in zip(self.accumulators, states):
            values += [to_state(conform(v, t), t) for v, t in zip(state, types_)]
        return tuple(values)

    def close(self) -> None:
        pass
