"""Records confluent-kafka's Python producer cannot write, written through librdkafka itself.

Python's producer takes header keys as `str`; other clients can write any bytes. To read such
a record back, tests produce it with librdkafka's `rd_kafka_produceva` (the library that
confluent-kafka bundles), via ctypes.
"""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka

_LIBS = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
VTYPE_END, VTYPE_TOPIC, VTYPE_VALUE, VTYPE_HEADER = 0, 1, 4, 9


class _Mem(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class _Header(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("val", ctypes.c_void_p), ("size", ctypes.c_ssize_t)]


class _Union(ctypes.Union):
    _fields_ = [("cstr", ctypes.c_char_p), ("mem", _Mem), ("header", _Header), ("pad", ctypes.c_char * 64)]


class _VU(ctypes.Structure):  # rd_kafka_vu_t
    _fields_ = [("vtype", ctypes.c_int), ("u", _Union)]


def _librdkafka():
    found = glob.glob(os.path.join(_LIBS, "librdkafka*.so*"))
    if not found:
        import pytest

        pytest.skip("confluent-kafka's bundled librdkafka was not found")
    lib = ctypes.CDLL(found[0])
    for name in ("rd_kafka_conf_new", "rd_kafka_new", "rd_kafka_produceva"):
        getattr(lib, name).restype = ctypes.c_void_p
    return lib


def produce_with_header(bootstrap: str, topic: str, value: bytes, header_key: bytes, header_value: bytes) -> None:
    """One record whose single header has the raw key `header_key` (no NUL bytes)."""
    lib = _librdkafka()
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(ctypes.c_void_p(conf), b"bootstrap.servers", bootstrap.encode(), err, 512)
    rk = lib.rd_kafka_new(0, ctypes.c_void_p(conf), err, 512)  # 0: a producer
    assert rk, err.value
    try:
        payload = ctypes.create_string_buffer(value, len(value))
        hval = ctypes.create_string_buffer(header_value, len(header_value))
        vus = (_VU * 4)()
        vus[0].vtype, vus[0].u.cstr = VTYPE_TOPIC, topic.encode()
        vus[1].vtype, vus[1].u.mem = VTYPE_VALUE, _Mem(ctypes.cast(payload, ctypes.c_void_p), len(value))
        vus[2].vtype = VTYPE_HEADER
        vus[2].u.header = _Header(header_key, ctypes.cast(hval, ctypes.c_void_p), len(header_value))
        vus[3].vtype = VTYPE_END
        assert not lib.rd_kafka_produceva(ctypes.c_void_p(rk), vus, 3), "rd_kafka_produceva failed"
        assert lib.rd_kafka_flush(ctypes.c_void_p(rk), 10000) == 0, "the record was not flushed"
    finally:
        lib.rd_kafka_destroy(ctypes.c_void_p(rk))
