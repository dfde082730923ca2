"""Physical reads: what a query reads of a topic, as data, and the `kafkasql` source options
that say it (the one place offsets become option text).

A push query reads from 'auto.offset.reset' on, narrowed by its plan's seek ranges; a
bounded read (a pull query, a table read as it is now) reads every partition from the
earliest offsets to the end offsets found when the read is planned, or only the partitions
holding the keys a pull query looks up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from ..engine.analysis.seek import Seek
from ..errors import StatementError
from . import admin
from .offsets import offsets_for_time, to_json

#: 'auto.offset.reset' values a push query accepts.
RESETS = ("earliest", "latest")


@dataclass(frozen=True)
class TopicRead:
    """One topic read: offsets are "earliest", "latest" or {partition: offset} (end exclusive)."""

    bootstrap: str
    topic: str
    streaming: bool
    starting: str | Mapping[int, int]
    ending: str | Mapping[int, int] | None = None
    partitions: tuple[int, ...] | None = None
    max_per_trigger: int | None = None
    include_headers: bool = True
    seek: Seek = Seek()
    #: Only the last header of each of these keys (HEADER('k') columns); None: every header.
    header_keys: tuple[str, ...] | None = None
    #: The key values a bounded read was narrowed to (their partitions are `partitions`).
    keys: tuple | None = None
    #: What the records carry besides key, value and headers: the worker's decoding and the metadata
    #: columns (kafka.source_options.ReadShape, or a bare WorkerDecoding), or None.
    shape: object | None = None
    #: A load generator's counter (loadgen/counter.py) read in place of a topic, or None.
    generator: object | None = None

    def options(self) -> dict[str, str]:
        """The `kafkasql` source options of this read."""
        options = {"bootstrap.servers": self.bootstrap, "topic": self.topic,
                   "startingOffsets": _offsets_text(self.starting)}
        if self.ending is not None:
            options["endingOffsets"] = _offsets_text(self.ending)
        if self.partitions is not None:
            options["partitions"] = ",".join(map(str, self.partitions))
        if self.max_per_trigger is not None:
            options["maxRecordsPerTrigger"] = str(self.max_per_trigger)
        if not self.include_headers:  # converting headers is the reader's costliest step
            options["includeHeaders"] = "false"
        elif self.header_keys is not None:
            options["headerKeys"] = json.dumps(list(self.header_keys))
        if self.shape:
            options.update(self.shape.options())
        if self.generator is not None:
            options.update(self.generator.options())
        return options

    @property
    def ending_offsets(self) -> dict[str, int] | None:
        """Where a seek-bounded stream ends, as the stream's progress names offsets."""
        return to_json(self.ending) if isinstance(self.ending, Mapping) else None

    def describe(self) -> str:
        """What is read, in words (EXPLAIN)."""
        if self.seek.empty:
            return "nothing (the WHERE clause cannot match)"
        if self.seek.narrows:
            return self.seek.describe()
        if self.keys is not None:
            where = "partition" + ("s " if len(self.partitions) > 1 else " ") + ", ".join(map(str, self.partitions))
            return (f"{where} only, where Kafka's default partitioner puts the keys looked up "
                    f"({', '.join(map(repr, self.keys))}), up to the end offsets now")
        if self.generator is not None:
            return "the counter's values due now" if not self.streaming else \
                f"the counter's values from the {_offsets_text(self.starting)} one on, as they fall due"
        if not self.streaming:
            return "the whole topic, as it is now"
        return f"all partitions from the {_offsets_text(self.starting)} offsets"

    def reading(self, partition_count: int | None = None) -> str:
        """The topic and what of it is read, as a waiting query's status says it; with the
        topic's `partition_count` when every partition is read."""
        what = self.describe()
        if partition_count is not None and what.startswith("all partitions"):
            what = f"all {partition_count} partition{'' if partition_count == 1 else 's'}{what[len('all partitions'):]}"
        if self.streaming and self.starting == "latest" and not self.seek.narrows:
            what += " (new records only)"
        return f"{'load generator' if self.generator is not None else 'topic'} {self.topic}: {what}"

    def ranges(self) -> str | None:
        """The offset ranges of a read with an end (EXPLAIN), else None."""
        if self.ending is None:
            return None
        return f"start {_offsets_text(self.starting)}, end {_offsets_text(self.ending)} (exclusive)"


def _offsets_text(offsets: str | Mapping[int, int]) -> str:
    return offsets if isinstance(offsets, str) else json.dumps(to_json(offsets))


def bounded(bootstrap: str, topic: str, *, include_headers: bool = True, seek: Seek = Seek(),
            start: Mapping[int, int] | None = None, header_keys: tuple[str, ...] | None = None,
            keys: tuple | None = None, partitions: tuple[int, ...] | None = None,
            shape=None) -> TopicRead:
    """The whole topic as it is now (from `start`, a source's first offsets, when it has them);
    with `partitions`, only those (where the key values `keys` are), each to its end offset now."""
    return TopicRead(bootstrap, topic, False, dict(start) if start else "earliest", "latest",
                     partitions=partitions, include_headers=include_headers, seek=seek, header_keys=header_keys,
                     keys=keys if partitions is not None else None, shape=shape)


def push(bootstrap: str, topic: str, *, reset: str, seek: Seek, max_per_trigger: int,
         include_headers: bool = True, start: Mapping[int, int] | None = None,
         header_keys: tuple[str, ...] | None = None, shape=None) -> TopicRead:
    """A stream from `reset` ('auto.offset.reset') on, narrowed by `seek`; the partitions are
    listed (once) only when the seek bounds offsets of every partition. A source with first
    offsets (Materialize's START OFFSET / START TIMESTAMP) never reads before them."""
    reset = reset.lower()
    if reset not in RESETS:
        raise StatementError(f"Invalid value for 'auto.offset.reset': '{reset}' (earliest or latest)")
    if seek.empty:  # contradictory bounds: nothing to read (the query returns no rows)
        return bounded(bootstrap, topic, include_headers=include_headers, seek=seek, start=start,
                       header_keys=header_keys, shape=shape)
    base: str | dict[int, int] = dict(start) if start else reset
    read = TopicRead(bootstrap, topic, True, base, max_per_trigger=max_per_trigger,
                     include_headers=include_headers, seek=seek, header_keys=header_keys, shape=shape)
    if not seek.narrows:
        return read
    parts = tuple(sorted(seek.partitions)) if seek.partitions is not None else \
        tuple(admin.topic_partitions(bootstrap, topic))
    starting: str | dict[int, int] = base
    if seek.rowtime_from is not None:
        starting = offsets_for_time(bootstrap, topic, parts, seek.rowtime_from)
        if seek.offset_from is not None:
            starting = {p: max(o, seek.offset_from) for p, o in starting.items()}
    elif seek.offset_from is not None:
        starting = {p: seek.offset_from for p in parts}
    if start and isinstance(starting, dict):
        starting = {p: max(o, start.get(p, 0)) for p, o in starting.items()}
    ending = {p: seek.offset_to for p in parts} if seek.offset_to is not None else None
    return TopicRead(bootstrap, topic, True, starting, ending, parts, max_per_trigger, include_headers, seek,
                     header_keys, shape=shape)
