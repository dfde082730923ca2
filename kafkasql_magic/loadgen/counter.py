"""Materialize's LOAD GENERATOR COUNTER (pure, no Spark): one column `counter bigint` counting
1, 2, 3, ..., the next value every TICK INTERVAL (one second by default), up to UP TO values.

The counter is a function of the clock: value n (at offset n - 1 of its one partition) is due
at `epoch + (n - 1) * tick`, the epoch being when the source was created. A read asks how many
values are due now; what a range of offsets holds follows from the offsets alone, so any
executor makes the same rows. Its records look like a Kafka topic's (`kafka.source.SCHEMA`):
no key, the value as Kafka's 8-byte big-endian long, partition 0, the offset, the time the
value was due; so the engine decodes, joins and sinks them as any source's.

Restarts: a query resumed from its checkpoint goes on after the last offset it read, and
reads at once every value that fell due while it was stopped (with the times they were due).
A session that replays CREATE SOURCE from its command topic starts the counter again from a
new epoch: a query resumed from a checkpoint past the new counter waits until it catches up,
so it never repeats a value.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from ..catalog import VALUE, Column, SourceDef
from ..errors import StatementError
from ..formats import FormatSpec
from ..sql import ast
from ..sql.ast_materialize import CreateLoadGenerator

#: The SourceDef property holding a load generator source's `Counter`.
GENERATOR = "LOAD GENERATOR"
#: The Spark data source that reads it.
FORMAT = "kafkasql_loadgen"
#: Materialize's generators; only COUNTER is made here.
KNOWN = ("AUCTION", "CLOCK", "COUNTER", "DATUMS", "KEY VALUE", "MARKETING", "TPCH")
DEFAULT_TICK_US = 1_000_000

_UNITS_US = {
    **dict.fromkeys(("us", "usec", "usecs", "microsecond", "microseconds"), 1),
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 1_000),
    **dict.fromkeys(("", "s", "sec", "secs", "second", "seconds"), 1_000_000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000_000),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600_000_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000_000),
}
_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)", re.IGNORECASE)
_CLOCK = re.compile(r"\s*(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?\s*$")


def interval_us(text: str) -> int:
    """PostgreSQL interval text ('1s', '500ms', '1 minute 30 seconds', '00:00:01.5') in
    microseconds; a bare number is seconds, as PostgreSQL reads it."""
    clock = _CLOCK.match(text)
    if clock:
        hours, minutes, seconds = int(clock[1]), int(clock[2]), float(clock[3] or 0)
        return round((hours * 3600 + minutes * 60 + seconds) * 1_000_000)
    total, at = 0.0, 0
    while at < len(text.rstrip()):
        part = _PART.match(text, at)
        if part is None or part[2].lower() not in _UNITS_US:
            raise StatementError(f'invalid input syntax for type interval: "{text}"')
        total += float(part[1]) * _UNITS_US[part[2].lower()]
        at = part.end()
    if at == 0:
        raise StatementError(f'invalid input syntax for type interval: "{text}"')
    return round(total)


@dataclass(frozen=True)
class Counter:
    """The counter of one source: a value every `tick_us`, the first at `epoch_us` (Unix time,
    microseconds), at most `up_to` values (None: no end)."""

    tick_us: int
    epoch_us: int
    up_to: int | None = None

    def due(self, now_us: int) -> int:
        """How many values are due at `now_us`: the offset after the last one."""
        if now_us < self.epoch_us:
            return 0
        count = (now_us - self.epoch_us) // self.tick_us + 1
        return count if self.up_to is None else min(count, self.up_to)

    def record(self, offset: int) -> tuple[bytes, int]:
        """The value at `offset` (as Kafka's long serializer writes it) and when it was due (µs)."""
        return struct.pack(">q", offset + 1), self.epoch_us + offset * self.tick_us

    def watermarks(self, now_us: int) -> dict[int, tuple[int, int]]:
        """Its one partition's (first, next) offsets at `now_us`, as a topic's watermarks."""
        return {0: (0, self.due(now_us))}

    def options(self) -> dict[str, str]:
        """The data source's options that say this counter."""
        options = {"tickMicros": str(self.tick_us), "epochMicros": str(self.epoch_us)}
        if self.up_to is not None:
            options["upTo"] = str(self.up_to)
        return options

    @classmethod
    def of_options(cls, options) -> "Counter":
        up_to = options.get("upTo")
        return cls(int(options["tickMicros"]), int(options["epochMicros"]), None if up_to is None else int(up_to))


def define(stmt: CreateLoadGenerator, now_us: int, text: str = "") -> SourceDef:
    """The catalog entry of CREATE SOURCE ... FROM LOAD GENERATOR, created at `now_us`; its
    topic is its own name (no Kafka topic is read)."""
    if stmt.generator != "COUNTER":
        if stmt.generator in KNOWN:
            raise StatementError(f"LOAD GENERATOR {stmt.generator} is not supported here "
                                 "(only COUNTER: CREATE SOURCE name FROM LOAD GENERATOR COUNTER)")
        raise StatementError(f"unknown load generator {stmt.generator}: expected one of {', '.join(KNOWN)}")
    tick = DEFAULT_TICK_US if stmt.tick_interval is None else interval_us(stmt.tick_interval)
    if tick <= 0:
        raise StatementError(f"TICK INTERVAL must be greater than zero, not '{stmt.tick_interval}'")
    counter = Counter(tick, now_us, stmt.up_to)
    columns = (Column("counter", ast.Type("BIGINT"), VALUE),)
    return SourceDef(kind="STREAM", name=stmt.name, topic=stmt.name, key_format=FormatSpec("NONE"),
                     value_format=FormatSpec("KAFKA"), columns=columns, statement=text,
                     properties={GENERATOR: counter}, dialect="materialize")


def counter_of(source) -> Counter | None:
    """The counter a source makes, None for a source over a Kafka topic."""
    return getattr(source, "properties", {}).get(GENERATOR)
