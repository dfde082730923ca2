"""Records of time 0 in Kafka's own encoding (`kafka.zero_time`): pure, no broker."""

from __future__ import annotations

import struct

import pytest

from kafkasql_magic.kafka.zero_time import (NotAcknowledged, ZeroTimeFailed, crc32c, partition_errors,
                                            produce_request, record_batch, varint, write_in_order)


def test_crc32c_and_varints_are_kafka_s():
    assert crc32c(b"123456789") == 0xE3069283  # the Castagnoli check value
    assert [varint(n) for n in (0, -1, 1, 63, -64, 64, 300)] == [
        b"\x00", b"\x01", b"\x02", b"\x7e", b"\x7f", b"\x80\x01", b"\xd8\x04"]


def test_a_record_batch_holds_time_zero_and_a_valid_checksum():
    batch = record_batch([(b"k", b"v", [("h", None)], 0), (None, None, None, 0)])
    base_offset, length, epoch, magic, crc = struct.unpack_from(">qiibI", batch)
    assert (base_offset, length, epoch, magic) == (0, len(batch) - 12, -1, 2)
    assert crc == crc32c(batch[21:])
    attributes, last_delta, first, most, producer, _, _, count = struct.unpack_from(">hiqqqhii", batch, 21)
    assert (attributes, last_delta, first, most, producer, count) == (0, 1, 0, 0, -1, 2)
    first_record = b"\x00" + varint(0) + varint(0) + varint(1) + b"k" + varint(1) + b"v" + varint(1) \
        + varint(1) + b"h" + varint(-1)
    assert batch[61:].startswith(varint(len(first_record)) + first_record)


def test_a_produce_request_and_its_answer():
    request = produce_request(7, "t", {2: b"BATCH"}, 5000)
    assert struct.unpack_from(">ihhi", request) == (len(request) - 4, 0, 3, 7)
    assert request.endswith(struct.pack(">ii", 2, 5) + b"BATCH")
    answer = struct.pack(">iih", 7, 1, 1) + b"t" + struct.pack(">iihqqi", 1, 2, 6, -1, -1, 0)
    assert partition_errors(answer, 7) == {2: 6}


class FakeProducer:
    """A producer whose flush leaves `left` records and whose metadata lookup fails with `error`."""

    def __init__(self, left=0, error=None):
        self.left, self.error, self.flushed = left, error, []

    def flush(self, timeout):
        self.flushed.append(timeout)
        return self.left

    def list_topics(self, topic, timeout):
        raise self.error


def test_records_of_time_zero_wait_for_those_before_them():
    with pytest.raises(NotAcknowledged) as info:
        write_in_order(FakeProducer(left=2), {}, "t", [(None, b"v", None, 0)], 5.0)
    assert info.value.failure is None
    with pytest.raises(NotAcknowledged) as info:
        write_in_order(FakeProducer(), {}, "t", [(None, b"v", None, 0)], 5.0, ["Broker: Message too large"])
    assert info.value.failure == "Broker: Message too large"


def test_a_refused_protocol_or_a_socket_error_is_a_zero_time_failure():
    producer = FakeProducer(error=ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(ZeroTimeFailed, match="Connection refused") as info:
        write_in_order(producer, {}, "t", [(None, b"v", None, 0)], 5.0)
    assert not isinstance(info.value, NotAcknowledged) and producer.flushed == [5.0]
    with pytest.raises(ZeroTimeFailed, match="security.protocol=SSL"):
        write_in_order(FakeProducer(), {"security.protocol": "ssl"}, "t", [(None, b"v", None, 0)], 5.0)
