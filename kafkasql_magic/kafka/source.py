"""The `kafkasql` Spark Python data source: Kafka records as rows, batch and streaming.

Schema: key binary, value binary, headers array<struct<key string, value binary>>,
topic string, partition int, offset bigint, timestamp timestamp (record time, UTC).

Options (strings):
  bootstrap.servers       required
  topic                   required
  startingOffsets         earliest | latest | JSON {"0": 42, "1": -2} (-2 earliest, -1 latest;
                          partitions missing from the JSON start at earliest). Streams
                          default to latest, batch reads to earliest.
  endingOffsets           latest (the end offsets when the read is planned) | JSON (only the
                          partitions it names are read). Batch reads default to latest; a
                          stream with it set stops advancing there.
  partitions              comma-separated partition ids to read (default all)
  maxRecordsPerTrigger    admission control for streams (spread fairly across partitions)
  maxRecordsPerPartition  split offset ranges into Spark input partitions of at most this many
                          records (default 200000)
  arrowBatchRows          rows per Arrow batch the reader yields (default 10000)
  includeHeaders          true (default) | false: false skips converting headers (the
                          costliest per-record step) and leaves the headers column out
  headerKeys              JSON list of header keys, e.g. ["k1", "k2"]: the headers column
                          holds only the last header of each of these keys (what HEADER('k')
                          columns read), built in the worker; default every header
  jsonValueColumns        JSON list of [member, type] pairs, e.g. [["id", "BIGINT"]]: each JSON
                          value is also decoded in the worker where that is exact, into the
                          columns __json_decoded, __json_0, ... (see kafka.json_columns);
                          jsonKeyColumns the same for keys (__json_key_decoded, __json_key_0, ...)
  rawBytes                all (default) | undecoded: the key and value NULL for records whose JSON
                          roles the worker decoded (see kafka.worker_decoding)
  metadataColumns         JSON list of the metadata columns to read, e.g. ["partition", "offset"]
                          (default all four: topic, partition, offset, timestamp); the others
                          are left out of the schema
  secret.avroValueLayout  AVRO values (secret.avroKeyLayout: keys) decoded in the worker into the
                          struct column __avro_value (__avro_key), registry properties included
                          (see kafka.worker_decoding)
  endOffsetProbe          auto | always | never (see `kafkasql_magic.kafka.offsets`)
  brokerOutageTimeoutMs   how long a stream waits for a broker that stops answering before
                          it fails (default 60000; see `kafkasql_magic.kafka.outage`)
  kafka.<setting>         passed to every librdkafka client (e.g. kafka.security.protocol)
  secret.kafka.<setting>  the same, for secrets (sasl.password): Spark masks option names
                          containing "secret" in plans and the UI

Streaming offsets are {"<partition>": next offset, "topicId": the topic's id} (no id from a
broker without topic ids). Partitions that appear while a stream runs are read from their
earliest offset. A missing or deleted topic raises KafkaError; so does a topic re-created
under a stream or since its checkpoint was made (`kafkasql_magic.kafka.identity`).
"""

from __future__ import annotations

import logging
from typing import Mapping

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkasql_magic.errors import BrokerUnreachable, KafkaError
from kafkasql_magic.kafka import admin, identity
from kafkasql_magic.kafka.arrow_batch import METADATA, KafkaRange, read_range
from kafkasql_magic.kafka.offsets import (
    EARLIEST,
    EndOffsets,
    fair_share,
    from_json,
    resolve,
    split_ranges,
    to_json,
    topic_id_of,
)
from kafkasql_magic.kafka.outage import BrokerOutage
from kafkasql_magic.kafka.source_options import SourceOptions

LOG = logging.getLogger("kafkasql_magic.kafka.source")
NAME = "kafkasql"

SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([
        StructField("key", StringType()),
        StructField("value", BinaryType()),
    ]))),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
])

class _Planner:
    """Driver-side state shared by the batch and the stream reader (never sent to executors)."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._offsets: EndOffsets | None = None
        self._topic_id: str | None = None  # the topic's id when first described
        self._made: set[str] = set()  # the ids this reader put in offsets (others: a checkpoint's)

    def __getstate__(self):  # the reader is pickled into Spark's read function
        state = dict(self.__dict__)
        state["_offsets"] = None
        return state

    @property
    def offsets(self) -> EndOffsets:
        if self._offsets is None:
            self._offsets = EndOffsets(self.opts.bootstrap, self.opts.conf, mode=self.opts.probe)
        return self._offsets

    def topic_partitions(self, position: Mapping[int, int] | None = None) -> list[int]:
        """The partitions to read; `identity.deleted` when the topic was deleted (and maybe
        re-created) since it was first described and records were read (`position`, the
        offsets read so far, goes into the message). At offset 0 everywhere nothing can be
        skipped: the stream goes on with the new topic from its start."""
        found = identity.lookup(self.opts.bootstrap, self.opts.topic, conf=self.opts.conf)
        if identity.replaced(self._topic_id, found) and (position is None or _read_some(position)):
            raise identity.deleted(self.opts.topic, self.opts.bootstrap, _read_some(position or {}))
        if found is None:
            raise admin.missing_topic(self.opts.topic, self.opts.bootstrap)
        self._topic_id = found.topic_id if found.topic_id is not None else self._topic_id
        parts = list(found.partitions)
        if self.opts.partitions is None:
            return parts
        missing = sorted(set(self.opts.partitions) - set(parts))
        if missing:
            raise KafkaError(f"Topic {self.opts.topic!r} has no partition {missing} "
                             f"(it has {len(parts)}; bootstrap {self.opts.bootstrap})")
        return list(self.opts.partitions)

    def offsets_json(self, offsets: Mapping[int, int]) -> dict:
        """`offsets` as the stream keeps them, with the id of the topic they were planned on."""
        if self._topic_id is not None:
            self._made.add(self._topic_id)
        return to_json(offsets, self._topic_id)

    def resume(self, offsets: Mapping) -> None:
        """Offsets naming a topic id this reader did not put there come from a checkpoint:
        `identity.check_resumed` (once per id), which stops a query resumed on a re-created topic."""
        kept = topic_id_of(offsets)
        if kept is not None and kept not in self._made:
            self._topic_id = identity.check_resumed(self.opts.bootstrap, self.opts.topic, self.opts.conf,
                                                    kept, _read_some(from_json(offsets)))
            self._made.add(kept)

    def confirm(self, position: Mapping[int, int]) -> None:
        """After a planning step failed: `identity.deleted` when the reason is that the topic
        was deleted or re-created (the topic is described again), else nothing. Raised without
        the failed step's error as its context: a query's message is the traceback's first
        KafkaError (`runtime.failure_message`), and that must be the cause."""
        if self._topic_id is not None and _read_some(position):
            try:
                self.topic_partitions(position)
            except KafkaError as cause:
                raise cause from None

    def check_named(self, parts) -> None:
        """JSON startingOffsets/endingOffsets may only name partitions that exist."""
        for name, spec in (("startingOffsets", self.opts.starting), ("endingOffsets", self.opts.ending)):
            if isinstance(spec, dict):
                unknown = sorted(set(spec) - set(parts))
                if unknown:
                    raise KafkaError(f"{name} names partitions {unknown} that topic "
                                     f"{self.opts.topic!r} does not have (bootstrap {self.opts.bootstrap})")

    def earliest(self, parts) -> dict[int, int]:
        return self.offsets.earliest(self.opts.topic, parts) if parts else {}

    def latest(self, parts) -> dict[int, int]:
        return self.offsets.latest(self.opts.topic, parts) if parts else {}

    def ranges(self, start: Mapping[int, int], end: Mapping[int, int], topic_id: str | None = None) -> list[KafkaRange]:
        """Ranges of [start, end) planned on the topic `topic_id` (default: the one described)."""
        o = self.opts
        topic_id = topic_id or self._topic_id
        out = []
        for p in sorted(end):
            for part, s, e in split_ranges(p, start[p], end[p], o.max_per_partition):
                rng = KafkaRange(o.topic, part, s, e, o.bootstrap, o.conf, o.batch_rows, o.idle_timeout,
                                 o.include_headers, o.header_keys, o.decoding, o.metadata)
                rng.topic_id = topic_id  # checked while and after reading (identity.verified)
                out.append(rng)
        return out


def _read_some(position: Mapping[int, int]) -> dict[int, int]:
    """The partitions of `position` that records were read from, with their offsets."""
    return {p: o for p, o in position.items() if o > 0}


class KafkaBatchReader(DataSourceReader):
    """A bounded read: startingOffsets to endingOffsets, resolved when the read is planned."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.planner = _Planner(opts)

    def plan(self) -> tuple[dict[int, int], dict[int, int]]:
        parts = self.planner.topic_partitions()
        self.planner.check_named(parts)
        lows = self.planner.earliest(parts)
        highs = self.planner.latest(parts)
        start = resolve(self.opts.starting, parts, lows, highs, unlisted=EARLIEST)
        end = resolve(self.opts.ending, parts, lows, highs, unlisted=None)
        start = {p: max(start[p], lows[p]) for p in end}
        end = {p: max(start[p], end[p]) for p in end}
        return start, end

    def partitions(self):
        start, end = self.plan()
        return self.planner.ranges(start, end)

    def read(self, partition):
        rng = partition if isinstance(partition, KafkaRange) else None
        return identity.verified(rng, read_range(rng, identity.watch(rng)))


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offset ranges; admission control and Trigger.AvailableNow."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.planner = _Planner(opts)
        self._bound: dict[int, int] | None = None  # resolved endingOffsets
        self._target: dict[int, int] | None = None  # Trigger.AvailableNow target
        self._seen_high: dict[int, int] = {}
        self._last_high: dict[int, int] | None = None
        self.outage = BrokerOutage(opts.outage_limit)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_seen_high"] = {}
        return state

    # -- helpers ----------------------------------------------------------------------
    def _resolve_bound(self, parts, lows, highs) -> None:
        if self.opts.ending is not None and self._bound is None:
            self._bound = resolve(self.opts.ending, parts, lows, highs, unlisted=None)

    def _highs(self, parts) -> dict[int, int]:
        highs = self.planner.latest(parts)
        for p, high in highs.items():
            seen = self._seen_high.get(p)
            if seen is not None and high < seen:
                raise KafkaError(
                    f"Topic {self.opts.topic!r} partition {p}: the end offset went back from "
                    f"{seen} to {high} (was the topic deleted and re-created?) "
                    f"(bootstrap {self.opts.bootstrap})")
            self._seen_high[p] = high
        self._last_high = highs
        return highs

    # -- DataSourceStreamReader -------------------------------------------------------
    def initialOffset(self) -> dict:
        parts = self.planner.topic_partitions()
        self.planner.check_named(parts)
        lows = self.planner.earliest(parts)
        highs = self._highs(parts)
        self._resolve_bound(parts, lows, highs)
        start = resolve(self.opts.starting, parts, lows, highs, unlisted=EARLIEST)
        return self.planner.offsets_json({p: min(max(o, lows[p]), highs[p]) for p, o in start.items()})

    def latestOffset(self, start: dict, limit=None) -> dict:
        try:
            end = self._latest_offset(start, limit)
        except BrokerUnreachable as exc:
            self.outage.tolerate(exc)  # raises once the outage outlasts its limit
            return start  # nothing new while the broker does not answer
        except KafkaError:  # lost partitions, offsets gone back, a failed listing: a re-created topic?
            try:
                self.planner.confirm(from_json(start))
            except BrokerUnreachable as exc:  # or the broker went away during the step
                self.outage.tolerate(exc)
                return start
            raise
        self.outage.clear()
        return end

    def _latest_offset(self, start: dict, limit=None) -> dict:
        self.planner.resume(start)
        begin = from_json(start)
        parts = self.planner.topic_partitions(position=begin)
        gone = sorted(set(begin) - set(parts))
        if gone:
            raise KafkaError(f"Topic {self.opts.topic!r} lost partitions {gone} "
                             f"(was it deleted and re-created?) (bootstrap {self.opts.bootstrap})")
        highs = self._highs(parts)
        fresh = [p for p in parts if p not in begin]
        limited = isinstance(limit, ReadMaxRows) or (
            limit is None and self.opts.max_per_trigger is not None)
        lows = self.planner.earliest(fresh if not limited else parts)
        if self._bound is None and self.opts.ending is not None:
            self._resolve_bound(parts, self.planner.earliest(parts), highs)
        first = {p: begin.get(p, lows.get(p, 0)) for p in parts}
        for p in parts:
            if highs[p] < first[p]:
                raise KafkaError(
                    f"Topic {self.opts.topic!r} partition {p} ends at offset {highs[p]}, before "
                    f"the stream's position {first[p]} (was the topic deleted and re-created?) "
                    f"(bootstrap {self.opts.bootstrap})")
        cap = dict(highs)
        for caps in (self._bound, self._target):
            if caps is not None:
                cap = {p: min(c, caps.get(p, first[p])) for p, c in cap.items()}
        end = {p: max(first[p], cap[p]) for p in parts}
        if limited:
            budget = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_per_trigger
            from_ = {p: max(first[p], lows.get(p, first[p])) for p in parts}
            take = fair_share({p: end[p] - from_[p] for p in parts}, budget)
            end = {p: (from_[p] + take[p]) if take[p] else first[p] for p in parts}
        return self.planner.offsets_json(end)

    def getDefaultReadLimit(self):
        if self.opts.max_per_trigger is not None:
            return ReadMaxRows(self.opts.max_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        parts = self.planner.topic_partitions()
        self._target = self._highs(parts)

    def reportLatestOffset(self):
        return to_json(self._last_high) if self._last_high is not None else None

    def partitions(self, start: dict, end: dict):
        self.planner.resume(end)  # a batch re-run from a checkpoint comes here first
        begin = from_json(start)
        finish = from_json(end)
        fresh = [p for p in finish if p not in begin]
        try:
            lows = self.planner.earliest(fresh)
        except KafkaError:
            self.planner.confirm(begin)
            raise
        first = {p: begin.get(p, lows.get(p, 0)) for p in finish}
        return self.planner.ranges(first, finish, topic_id_of(end))

    def read(self, partition):
        return identity.verified(partition, read_range(partition, identity.watch(partition)))

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        self.planner._offsets = None


class KafkaSqlDataSource(DataSource):
    """`spark.read.format("kafkasql")` / `spark.readStream.format("kafkasql")`."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        opts = SourceOptions.parse(self.options, streaming=False)
        fields = [f for f in SCHEMA.fields if (f.name not in METADATA or f.name in opts.metadata)
                  and (f.name != "headers" or opts.include_headers)]
        return StructType(fields + (opts.decoding.spark_fields() if opts.decoding else []))

    def reader(self, schema) -> KafkaBatchReader:
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema) -> KafkaStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))


_REGISTERED_ATTR = "_kafkasql_source_registered"


def register(spark) -> None:
    """Register the `kafkasql` data source with `spark`; a no-op the second time."""
    jsession = getattr(spark, "_jsparkSession", None)
    marker = jsession if jsession is not None else spark
    try:
        if getattr(spark, _REGISTERED_ATTR, None) is marker:
            return
    except Exception:
        pass
    spark.dataSource.register(KafkaSqlDataSource)
    try:
        setattr(spark, _REGISTERED_ATTR, marker)
    except Exception:
        pass
