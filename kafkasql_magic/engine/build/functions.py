"""ksql function name -> Spark expression builder, as a table.

A builder gets the compile context, the compiled argument columns and their AST (to read
literal options such as a byte order at plan time). A function that can fail on a record
registers an error condition with `ctx.fail(condition, message)`; the build turns those
into NULL results and processing-log entries instead of a failed query.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...errors import StatementError
from ...formats import bytes_codec
from ...sql import ast
from . import functions_more


class Context(Protocol):
    def fail(self, condition: Column, message: Column) -> None: ...


Builder = Callable[[Context, list[Column], Sequence[ast.Expr]], Column]


@dataclass(frozen=True)
class Function:
    build: Builder
    min_args: int
    max_args: int | None  # None: variadic


def _literal_text(expr: ast.Expr) -> str | None:
    return expr.value if isinstance(expr, ast.Literal) and isinstance(expr.value, str) else None


# ---------------------------------------------------------------- bytes (KLIP-57 helpers)
_BYTE_ORDERS = {"BIG_ENDIAN": False, "LITTLE_ENDIAN": True}


def _from_bytes(decoder, width: int) -> Builder:
    """ksqlDB's *_FROM_BYTES(bytes [, byte_order]): a byte order written as a literal is checked
    at once; one computed per record (ksqlDB's `BytesUtils.byteOrderType`) that is neither order,
    NULL included, makes the result NULL with a processing-log entry, as a wrong width does."""
    def build(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
        little: bool | Column = False
        bad_order = F.lit(False)
        if len(args) > 1 and isinstance(exprs[1], ast.Literal):
            order = _literal_text(exprs[1])
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
        literal = _literal_text(exprs[1])
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


# ---------------------------------------------------------------- the table
def _simple(fn: Callable[..., Column]) -> Builder:
    return lambda ctx, args, exprs: fn(*args)


def _substring(s: Column, pos: Column, length: Column | None = None) -> Column:
    return F.substring(s, pos, length) if length is not None else F.substring(s, pos, F.lit(2**31 - 1))


def _literal_required(expr: ast.Expr, what: str):
    if not isinstance(expr, ast.Literal) or expr.value is None:
        raise StatementError(f"{what} must be a literal.")
    return expr.value


def _regexp_extract(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    pattern = _literal_required(exprs[0], "REGEXP_EXTRACT's pattern")
    group = _literal_required(exprs[2], "REGEXP_EXTRACT's group") if len(exprs) > 2 else 0
    return F.regexp_extract(args[1], str(pattern), int(group))


def _split(s: Column, delimiter: Column) -> Column:
    """ksqlDB splits on a plain delimiter, Spark on a regex: quote it."""
    return F.split(s, F.concat(F.lit("\\Q"), delimiter, F.lit("\\E")))


def _array_concat(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """ksqlDB: one NULL side gives the other side (a NULL literal has no array type to concat)."""
    a, b = args
    null = [isinstance(e, ast.Literal) and e.value is None for e in exprs]
    if null[0] or null[1]:
        return b if null[0] else a
    return F.when(a.isNull(), b).when(b.isNull(), a).otherwise(F.concat(a, b))


def _timestamp_to_string(ms: Column, fmt: Column, tz: Column | None = None) -> Column:
    ts = F.timestamp_millis(ms)
    if tz is not None:
        ts = F.from_utc_timestamp(ts, tz)
    return functions_more.date_format(ts, fmt)


FUNCTIONS: dict[str, Function] = {
    "ABS": Function(_simple(F.abs), 1, 1),
    "CEIL": Function(_simple(F.ceil), 1, 1),
    "FLOOR": Function(_simple(F.floor), 1, 1),
    "SQRT": Function(_simple(F.sqrt), 1, 1),
    "EXP": Function(_simple(F.exp), 1, 1),
    "LN": Function(_simple(F.log), 1, 1),
    "SIGN": Function(_simple(F.signum), 1, 1),
    "GREATEST": Function(_simple(F.greatest), 2, None),
    "LEAST": Function(_simple(F.least), 2, None),
    "UCASE": Function(_simple(F.upper), 1, 1),
    "LCASE": Function(_simple(F.lower), 1, 1),
    "INITCAP": Function(_simple(F.initcap), 1, 1),
    "LEN": Function(_simple(F.length), 1, 1),
    "TRIM": Function(_simple(F.trim), 1, 1),
    "LTRIM": Function(_simple(F.ltrim), 1, 1),
    "RTRIM": Function(_simple(F.rtrim), 1, 1),
    "CONCAT": Function(_simple(F.concat), 1, None),
    "CONCAT_WS": Function(lambda ctx, a, e: F.concat_ws(_literal_text(e[0]) or "", *a[1:]), 2, None),
    "SUBSTRING": Function(_simple(_substring), 2, 3),
    "REPLACE": Function(_simple(F.replace), 3, 3),
    "ROUND": Function(_simple(lambda x, d=None: F.round(x, 0 if d is None else d)), 1, 2),
    "INSTR": Function(_simple(F.instr), 2, 2),
    "SPLIT": Function(_simple(_split), 2, 2),
    "LPAD": Function(_simple(F.lpad), 3, 3),
    "RPAD": Function(_simple(F.rpad), 3, 3),
    "REGEXP_EXTRACT": Function(_regexp_extract, 2, 3),
    "REGEXP_REPLACE": Function(_simple(F.regexp_replace), 3, 3),
    "COALESCE": Function(_simple(F.coalesce), 1, None),
    "IFNULL": Function(_simple(F.coalesce), 2, 2),
    "NULLIF": Function(_simple(F.nullif), 2, 2),
    "ARRAY_LENGTH": Function(_simple(F.size), 1, 1),
    "ARRAY_CONTAINS": Function(_simple(F.array_contains), 2, 2),
    "MAP_KEYS": Function(_simple(F.map_keys), 1, 1),
    "MAP_VALUES": Function(_simple(F.map_values), 1, 1),
    "ARRAY": Function(_simple(F.array), 0, None),
    "MAP": Function(_simple(F.create_map), 0, None),  # MAP(k := v, ...) parses as MAP(k, v, ...)
    "EXTRACTJSONFIELD": Function(lambda ctx, a, e: F.get_json_object(
        a[0], str(_literal_required(e[1], "EXTRACTJSONFIELD's path"))), 2, 2),
    "UNIX_TIMESTAMP": Function(lambda ctx, a, e: F.unix_millis(a[0]) if a else F.unix_millis(F.current_timestamp()), 0, 1),
    "UNIX_DATE": Function(lambda ctx, a, e: F.unix_date(a[0]) if a else F.unix_date(F.current_date()), 0, 1),
    "FROM_UNIXTIME": Function(_simple(F.timestamp_millis), 1, 1),
    "TIMESTAMPTOSTRING": Function(_simple(_timestamp_to_string), 2, 3),
    "FORMAT_TIMESTAMP": Function(_simple(lambda ts, fmt, tz=None: functions_more.date_format(
        ts if tz is None else F.from_utc_timestamp(ts, tz), fmt)), 2, 3),
    "PARSE_TIMESTAMP": Function(_simple(lambda s, fmt, tz=None: F.try_to_timestamp(s, fmt) if tz is None
                                         else F.to_utc_timestamp(F.try_to_timestamp(s, fmt), tz)), 2, 3),
    "STRINGTOTIMESTAMP": Function(_simple(lambda s, fmt, tz=None: F.unix_millis(
        F.try_to_timestamp(s, fmt) if tz is None else F.to_utc_timestamp(F.try_to_timestamp(s, fmt), tz))), 2, 3),
    "INT_FROM_BYTES": Function(_from_bytes(bytes_codec.int_from_bytes, 4), 1, 2),
    "BIGINT_FROM_BYTES": Function(_from_bytes(bytes_codec.bigint_from_bytes, 8), 1, 2),
    "DOUBLE_FROM_BYTES": Function(_from_bytes(bytes_codec.double_from_bytes, 8), 1, 2),
    "FROM_BYTES": Function(_encoding(0), 2, 2),
    "TO_BYTES": Function(_encoding(1), 2, 2),
    # math (DOUBLE results, as in ksqlDB)
    **{name: Function(_simple(fn), 1, 1) for name, fn in (
        ("ACOS", F.acos), ("ASIN", F.asin), ("ATAN", F.atan), ("COS", F.cos), ("COSH", F.cosh), ("COT", F.cot),
        ("SIN", F.sin), ("SINH", F.sinh), ("TAN", F.tan), ("TANH", F.tanh), ("DEGREES", F.degrees),
        ("RADIANS", F.radians), ("CBRT", F.cbrt))},
    "ATAN2": Function(_simple(F.atan2), 2, 2),
    "POWER": Function(_simple(F.pow), 2, 2),
    "LOG": Function(_simple(lambda a, b=None: F.log(a) if b is None else F.log(a, b)), 1, 2),
    "PI": Function(lambda ctx, a, e: F.lit(math.pi), 0, 0),
    "RANDOM": Function(lambda ctx, a, e: F.rand(), 0, 0),
    # strings
    "CHR": Function(_simple(F.chr), 1, 1),
    "UUID": Function(lambda ctx, a, e: F.uuid(), 0, 0),
    "MASK": Function(_simple(lambda s: F.mask(s, F.lit("X"), F.lit("x"), F.lit("n"), F.lit("-"))), 1, 1),
    **{f"URL_EXTRACT_{part}": Function(_simple(lambda u, _p=spark_part: F.parse_url(u, F.lit(_p))), 1, 1)
       for part, spark_part in (("HOST", "HOST"), ("PATH", "PATH"), ("PROTOCOL", "PROTOCOL"),
                                ("QUERY", "QUERY"), ("FRAGMENT", "REF"))},
    "URL_EXTRACT_PARAMETER": Function(_simple(lambda u, name: F.parse_url(u, F.lit("QUERY"), name)), 2, 2),
    # collections
    "ARRAY_DISTINCT": Function(_simple(F.array_distinct), 1, 1),
    "ARRAY_EXCEPT": Function(_simple(F.array_except), 2, 2),
    "ARRAY_INTERSECT": Function(_simple(F.array_intersect), 2, 2),
    "ARRAY_UNION": Function(_simple(F.array_union), 2, 2),
    "ARRAY_MAX": Function(_simple(F.array_max), 1, 1),
    "ARRAY_MIN": Function(_simple(F.array_min), 1, 1),
    "ARRAY_REMOVE": Function(_simple(F.array_remove), 2, 2),
    "ARRAY_CONCAT": Function(_array_concat, 2, 2),
    "ARRAY_JOIN": Function(_simple(lambda a, d=None: F.call_function(
        "array_join", a.cast("array<string>"), F.lit(",") if d is None else d)), 1, 2),
    "SLICE": Function(_simple(lambda a, start, end: F.slice(a, start, end - start + 1)), 3, 3),  # `to` inclusive
    "ELT": Function(_simple(F.elt), 2, None),
    "AS_MAP": Function(_simple(F.map_from_arrays), 2, 2),
    "AS_VALUE": Function(_simple(lambda v: v), 1, 1),  # copies a key column into the value: same value here
    # Materialize's helpers from its Kafka headers design.
    "CONVERT_FROM": Function(_encoding(0), 2, 2),
    "HEADERS_TO_MAP": Function(_simple(lambda h: _headers_to_map(h)), 1, 1),
}


FUNCTIONS.update({name: Function(*spec) for name, spec in functions_more.TABLE.items()})


def _headers_to_map(headers: Column) -> Column:
    """Headers as a map; for a key that repeats, the smallest value wins (the design's rule,
    deterministic whatever the header order)."""
    h = headers.cast("array<struct<k:string,v:binary>>")  # field names differ by dialect
    keys = F.array_distinct(F.transform(h, lambda x: x["k"]))
    return F.map_from_arrays(keys, F.transform(keys, lambda k: F.array_min(
        F.transform(F.filter(h, lambda x: x["k"] == k), lambda x: x["v"]))))


def lookup(name: str, nargs: int) -> Function:
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise StatementError(f"Can't find any functions with the name '{name}'")
    if nargs < fn.min_args or (fn.max_args is not None and nargs > fn.max_args):
        raise StatementError(f"Function '{name}' does not accept {nargs} argument(s).")
    return fn
