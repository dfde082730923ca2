"""ksqlDB's functions between bytes and numbers or text (KLIP-57) and Materialize's
CONVERT_FROM and HEADERS_TO_MAP from its Kafka headers design."""

from __future__ import annotations

from typing import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...errors import StatementError
from ...formats import bytes_codec
from ...sql import ast
from .builders_spark import Builder, Context, Function, literal_text, simple

_BYTE_ORDERS = {"BIG_ENDIAN": False, "LITTLE_ENDIAN": True}


def _from_bytes(decoder, width: int) -> Builder:
    """ksqlDB's *_FROM_BYTES(bytes [, byte_order]): a byte order written as a literal is checked
    at once; one computed per record (ksqlDB's `BytesUtils.byteOrderType`) that is neither order,
    NULL included, makes the result NULL with a processing-log entry, as a wrong width does."""
    def build(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
        little: bool | Column = False
        bad_order = F.lit(False)
        if len(args) > 1 and isinstance(exprs[1], ast.Literal):
            order = literal_text(exprs[1])
            if order is None or order.upper() not in _BYTE_ORDERS:
                raise StatementError(f"{_UNKNOWN_BYTE_ORDER}'{'null' if exprs[1].value is None else exprs[1].value}'.")
            little = _BYTE_ORDERS[order.upper()]
        elif len(args) > 1:
            order = F.upper(args[1])
            little = order == F.lit("LITTLE_ENDIAN")
            bad_order = F.coalesce(~order.isin(*_BYTE_ORDERS), F.lit(True))
            ctx.fail(bad_order, F.concat(F.lit(_UNKNOWN_BYTE_ORDER + "'"), F.coalesce(args[1], F.lit("null")),
                                         F.lit("'.")))
        b = args[0]
        bad = ~bad_order & b.isNotNull() & (F.length(b) != width)
        ctx.fail(bad, F.concat(F.lit(f"Number of bytes must be equal to {width}, but found "),
                               F.length(b).cast("string")))
        return F.when(~bad & ~bad_order, decoder(b, little))

    return build


_UNKNOWN_BYTE_ORDER = "Byte order must be BIG_ENDIAN or LITTLE_ENDIAN. Unknown byte order "

_UNKNOWN_ENCODING = "Unknown encoding type '{}'. Supported formats are 'hex', 'utf8', 'ascii', and 'base64'."

#: encoding -> (bytes -> string, string -> bytes)
ENCODINGS: dict[str, tuple[Callable[[Column], Column], Callable[[Column], Column]]] = {
    "hex": (lambda b: F.upper(F.hex(b)), lambda s: F.try_to_binary(s, F.lit("hex"))),
    # Invalid UTF-8 becomes U+FFFD, as Java's `new String(bytes, UTF_8)` in ksqlDB does.
    "utf8": (lambda b: F.make_valid_utf8(b.cast("string")), lambda s: F.encode(s, "UTF-8")),
    "utf-8": (lambda b: F.make_valid_utf8(b.cast("string")), lambda s: F.encode(s, "UTF-8")),
    "ascii": (lambda b: F.regexp_replace(F.make_valid_utf8(b.cast("string")), "[^\\x00-\\x7F]", "\ufffd"),
              lambda s: F.encode(s, "US-ASCII")),
    "base64": (lambda b: F.base64(b), lambda s: F.try_to_binary(s, F.lit("base64"))),
}

#: encoding -> bytes that are not text in it (decoding them would invent U+FFFD characters).
NOT_TEXT: dict[str, Callable[[Column], Column]] = {
    "utf8": lambda b: ~F.is_valid_utf8(b.cast("string")),
    "utf-8": lambda b: ~F.is_valid_utf8(b.cast("string")),
    "ascii": lambda b: ~F.hex(b).rlike("^(?:[0-7][0-9A-F])*$"),
}


def _encoding(direction: int) -> Builder:
    def build(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
        value, enc = args
        literal = literal_text(exprs[1])
        if literal is not None:
            if literal.lower() not in ENCODINGS:
                raise StatementError(_UNKNOWN_ENCODING.format(literal))
            invalid = NOT_TEXT.get(literal.lower()) if direction == 0 else None
            if invalid is not None:  # a poison header or value: NULL and a processing-log entry
                ctx.fail(value.isNotNull() & invalid(value),
                         F.lit(f"Bytes are not valid {literal.lower()} text; the result is NULL"))
            return ENCODINGS[literal.lower()][direction](value)
        result = None
        for name, codec in ENCODINGS.items():
            branch = F.lower(enc) == name
            result = F.when(branch, codec[direction](value)) if result is None else result.when(branch, codec[direction](value))
        known = F.lower(enc).isin(*ENCODINGS)
        ctx.fail(enc.isNotNull() & ~known,
                 F.concat(F.lit("Unknown encoding type '"), enc,
                          F.lit("'. Supported formats are 'hex', 'utf8', 'ascii', and 'base64'.")))
        return result

    return build


def _headers_to_map(headers: Column) -> Column:
    """Headers as a map; for a key that repeats, the smallest value wins (the design's rule,
    deterministic whatever the header order)."""
    h = headers.cast("array<struct<k:string,v:binary>>")  # field names differ by dialect
    keys = F.array_distinct(F.transform(h, lambda x: x["k"]))
    return F.map_from_arrays(keys, F.transform(keys, lambda k: F.array_min(
        F.transform(F.filter(h, lambda x: x["k"] == k), lambda x: x["v"]))))


FUNCTIONS: dict[str, Function] = {
    "INT_FROM_BYTES": Function(_from_bytes(bytes_codec.int_from_bytes, 4), 1, 2),
    "BIGINT_FROM_BYTES": Function(_from_bytes(bytes_codec.bigint_from_bytes, 8), 1, 2),
    "DOUBLE_FROM_BYTES": Function(_from_bytes(bytes_codec.double_from_bytes, 8), 1, 2),
    "FROM_BYTES": Function(_encoding(0), 2, 2),
    "TO_BYTES": Function(_encoding(1), 2, 2),
    "CONVERT_FROM": Function(_encoding(0), 2, 2),
    "HEADERS_TO_MAP": Function(simple(_headers_to_map), 1, 1),
}
