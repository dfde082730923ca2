"""Record headers on the way into Kafka: keys are text, values bytes.

Kafka header keys are strings (UTF-8 on the wire; Java's `Header.key()` is a String).
confluent-kafka's producer turns a `bytes` key into its Python repr, so `b"\\xff\\xfe"` would
arrive as the 11-character text `b'\\xff\\xfe'` - a silent corruption. Keys given as bytes are
decoded here, and a key that is not UTF-8 is refused, naming the key.
"""

from __future__ import annotations

from kafkasql_magic.errors import KafkaError


def header_key(key) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, (bytes, bytearray, memoryview)):
        raw = bytes(key)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KafkaError(f"Header key {raw!r} is not UTF-8 text (byte {exc.start}): Kafka header keys "
                             "are strings; put binary data in the header's value") from None
    raise KafkaError(f"Header key {key!r} must be text, not {type(key).__name__}")


def checked_headers(headers):
    """A record's headers as confluent-kafka takes them: (text key, value) pairs, order kept."""
    items = headers.items() if isinstance(headers, dict) else headers
    return [(header_key(k), v) for k, v in items]


#: The processing-log message for a record whose headers could not be read.
UNREADABLE_MESSAGE = "Record headers could not be read: a header key is not UTF-8 text"


def unreadable_error(headers):
    """The decoding error of a record whose raw `headers` column is NULL: the reader leaves it
    NULL only when confluent-kafka cannot read a header key (see kafka.arrow_batch)."""
    from pyspark.sql import functions as F

    return F.when(headers.isNull(), F.lit(UNREADABLE_MESSAGE))
