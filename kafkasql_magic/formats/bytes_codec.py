"""Fixed-width numbers from bytes as native Spark expressions.

Spark has no bytes->int cast, so the bytes go through hex and `conv`; it stays inside the
JVM, which is what matters on the hot path of key and header decoding.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_TWO_32 = 4294967296


def _unsigned(b: Column) -> Column:
    """Unsigned big-endian value of up to 4 bytes, as BIGINT."""
    return F.conv(F.hex(b), 16, 10).cast("bigint")


def _in_order(b: Column, width: int, little_endian: bool | Column) -> Column:
    """`b` big-endian: reversed when `little_endian` (a flag, or a boolean column per record)."""
    if little_endian is False:
        return b
    reversed_ = F.concat(*[F.substring(b, i, 1) for i in range(width, 0, -1)])
    return reversed_ if little_endian is True else F.when(little_endian, reversed_).otherwise(b)


def int_from_bytes(b: Column, little_endian: bool | Column = False) -> Column:
    u = _unsigned(_in_order(b, 4, little_endian))
    return F.when(u >= 2147483648, u - _TWO_32).otherwise(u).cast("int")


def bigint_from_bytes(b: Column, little_endian: bool | Column = False) -> Column:
    b = _in_order(b, 8, little_endian)
    high = int_from_bytes(F.substring(b, 1, 4)).cast("bigint")
    low = _unsigned(F.substring(b, 5, 4))
    return F.shiftleft(high, 32).bitwiseOR(low)


def double_from_bytes(b: Column, little_endian: bool | Column = False) -> Column:
    """IEEE 754 binary64 from its 8 bytes, by sign, exponent and mantissa."""
    bits = bigint_from_bytes(b, little_endian)
    exponent = F.shiftright(bits, 52).bitwiseAND(0x7FF)
    mantissa = bits.bitwiseAND(0xFFFFFFFFFFFFF).cast("double")
    magnitude = (
        F.when(exponent == 0, mantissa * F.pow(F.lit(2.0), F.lit(-1074)))
        .when(exponent == 2047, F.when(mantissa == 0, F.lit(float("inf"))).otherwise(F.lit(float("nan"))))
        .otherwise((F.lit(1.0) + mantissa * F.pow(F.lit(2.0), F.lit(-52))) * F.pow(F.lit(2.0), exponent - 1023))
    )
    return F.when(bits < 0, -magnitude).otherwise(magnitude)
