"""Records of time 0 in Kafka's own encoding (`kafka.zero_time`): pure, no broker."""

from __future__ import annotations

import struct

from kafkasql_magic.kafka.zero_time import crc32c, partition_errors, produce_request, record_batch, varint


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
