"""The sink writer's partition choice: a windowed sink places each record by its inner key, as
Kafka Streams' windowed partitioner does; other sinks leave it to the producer's partitioner."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from kafkasql_magic.catalog import SourceDef
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.kafka.partitioner import default_partition
from kafkasql_magic.kafka.writer import SinkOptions, _partitions
from kafkasql_magic.sinks.runner import SinkWrite

BASE = {"bootstrap.servers": "b:9092", "topic": "t"}


def windowed_key(inner: bytes, *bounds: int) -> bytes:
    return inner + b"".join(struct.pack(">q", b) for b in bounds)


def test_windowed_keys_go_to_their_inner_keys_partition():
    options = SinkOptions.parse({**BASE, "partition.windowBytes": "8", "partition.count": "6"})
    assert options.windowed == (8, 6)
    inners = [struct.pack(">i", i) for i in range(20)]
    keys = [windowed_key(k, 1_700_000_000_000 + 1000 * i) for i, k in enumerate(inners)] + [None]
    batch = pa.record_batch({"key": pa.array(keys, pa.binary())})
    assert _partitions(batch, keys, options) == [default_partition(k, 6) for k in inners] + [-1]


def test_session_keys_drop_end_and_start():
    options = SinkOptions.parse({**BASE, "partition.windowBytes": "16", "partition.count": "3"})
    key = windowed_key(b"alice", 20, 10)
    batch = pa.record_batch({"key": pa.array([key], pa.binary())})
    assert _partitions(batch, [key], options) == [default_partition(b"alice", 3)]


def test_a_partition_column_wins_and_plain_sinks_leave_it_to_the_producer():
    key = windowed_key(b"k", 5)
    given = pa.record_batch({"key": pa.array([key], pa.binary()), "partition": pa.array([2], pa.int32())})
    windowed = SinkOptions.parse({**BASE, "partition.windowBytes": "8", "partition.count": "6"})
    assert _partitions(given, [key], windowed) == [2]
    plain = SinkOptions.parse(BASE)
    assert plain.windowed is None
    assert _partitions(pa.record_batch({"key": pa.array([key], pa.binary())}), [key], plain) == [-1]


def sink_write(**kwargs) -> SinkWrite:
    sink = SourceDef("TABLE", "OUT", "out", FormatSpec("KAFKA"), FormatSpec("JSON"), ())
    return SinkWrite(sink, {}, bootstrap="b:9092", **kwargs)


@pytest.mark.parametrize("kwargs, expected", [
    ({}, None),
    ({"window_start": "WINDOWSTART", "partitions": 4}, ("8", "4")),
    ({"window_start": "WINDOWSTART", "session_end": "WINDOWEND", "partitions": 2}, ("16", "2")),
])
def test_a_windowed_sink_asks_the_writer_for_inner_key_partitions(kwargs, expected):
    options = sink_write(**kwargs).options()
    got = (options["partition.windowBytes"], options["partition.count"]) if "partition.count" in options else None
    assert got == expected


def test_a_windowed_sink_without_its_partition_count_is_an_internal_error():
    with pytest.raises(RuntimeError, match="partition count"):
        sink_write(window_start="WINDOWSTART").options()
