"""The Kafka source's options as Spark hands them over (text), checked and typed once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from kafkasql_magic.clientconf import SECRET_OPTION
from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import worker_decoding
from kafkasql_magic.kafka.arrow_batch import BATCH_ROWS, IDLE_TIMEOUT, METADATA
from kafkasql_magic.kafka.json_options import json_list
from kafkasql_magic.kafka.offsets import parse_offsets
from kafkasql_magic.kafka.outage import limit_of

MAX_RECORDS_PER_PARTITION = 200_000


def _positive_int(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise KafkaError(f"Option {name} must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise KafkaError(f"Option {name} must be a positive integer, not {raw!r}")
    return value


def _header_keys(options: Mapping[str, str]) -> tuple[str, ...] | None:
    """headerKeys: a JSON list of header keys (only their last values are read), else None."""
    keys = json_list(options, "headerKeys", lambda keys: all(isinstance(k, str) for k in keys),
                     "a JSON list of header keys")
    return None if keys is None else tuple(keys)


def _metadata(options: Mapping[str, str]) -> tuple[str, ...]:
    """metadataColumns: a JSON list naming some of topic, partition, offset, timestamp; default all."""
    names = json_list(options, "metadataColumns", lambda names: all(name in METADATA for name in names),
                      f"a JSON list of some of {', '.join(METADATA)}")
    return METADATA if names is None else tuple(name for name in METADATA if name in names)


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise KafkaError(f"Option {name} must be true or false, not {raw!r}")


@dataclass
class SourceOptions:
    bootstrap: str
    topic: str
    starting: object
    ending: object | None
    partitions: tuple[int, ...] | None = None
    max_per_trigger: int | None = None
    max_per_partition: int = MAX_RECORDS_PER_PARTITION
    probe: str = "auto"
    conf: dict = field(default_factory=dict)
    batch_rows: int = BATCH_ROWS
    idle_timeout: float = IDLE_TIMEOUT
    include_headers: bool = True
    header_keys: tuple[str, ...] | None = None  # None: every header
    decoding: object | None = None  # what the reader decodes in its worker (kafka.worker_decoding)
    metadata: tuple[str, ...] = METADATA  # the metadata columns read
    outage_limit: float = 60.0

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> "SourceOptions":
        get = options.get
        bootstrap = (get("bootstrap.servers") or get("kafka.bootstrap.servers") or "").strip()
        topic = (get("topic") or get("subscribe") or "").strip()
        if not bootstrap:
            raise KafkaError("The kafkasql source needs the option bootstrap.servers")
        if not topic:
            raise KafkaError("The kafkasql source needs the option topic")
        starting = parse_offsets(get("startingOffsets"), "startingOffsets",
                                 "latest" if streaming else "earliest")
        ending_raw = get("endingOffsets")
        if ending_raw is None and not streaming:
            ending_raw = "latest"
        ending = parse_offsets(ending_raw, "endingOffsets", "latest") if ending_raw is not None else None
        if ending == "earliest":
            raise KafkaError("endingOffsets cannot be earliest")
        parts = get("partitions")
        partitions = None
        if parts:
            try:
                partitions = tuple(sorted({int(p) for p in str(parts).split(",") if p.strip()}))
            except ValueError:
                raise KafkaError(f"Option partitions must list partition numbers, not {parts!r}") from None
        conf = {}
        for key, value in options.items():
            for prefix in ("kafka.", SECRET_OPTION):  # secret ones under a name Spark redacts
                if key.lower().startswith(prefix) and key.lower() != "kafka.bootstrap.servers":
                    conf[key[len(prefix):]] = value
        return cls(
            bootstrap=bootstrap,
            topic=topic,
            starting=starting,
            ending=ending,
            partitions=partitions,
            max_per_trigger=_positive_int(options, "maxRecordsPerTrigger", None),
            max_per_partition=_positive_int(options, "maxRecordsPerPartition", MAX_RECORDS_PER_PARTITION),
            probe=(get("endOffsetProbe") or "auto").strip().lower(),
            conf=conf,
            batch_rows=_positive_int(options, "arrowBatchRows", BATCH_ROWS),
            # a read waits for a broker that stops answering as long as planning does
            idle_timeout=float(get("readIdleTimeoutSeconds") or max(IDLE_TIMEOUT, limit_of(options))),
            include_headers=_bool(options, "includeHeaders", True),
            header_keys=_header_keys(options),
            decoding=worker_decoding.parse(options),
            metadata=_metadata(options),
            outage_limit=limit_of(options),
        )


@dataclass(frozen=True)
class ReadShape:
    """What a planned read's records carry besides their key, value and headers: the worker's
    decoding (kafka.worker_decoding, maybe with the raw bytes of decoded records left out) and
    the metadata columns; as source options (`TopicRead.shape` carries it to them)."""

    decoding: object | None = None
    metadata: tuple[str, ...] = METADATA

    def __bool__(self) -> bool:
        return bool(self.decoding) or self.metadata != METADATA

    def options(self) -> dict[str, str]:
        out = dict(self.decoding.options()) if self.decoding else {}
        if self.metadata != METADATA:
            out["metadataColumns"] = json.dumps(list(self.metadata))
        return out
