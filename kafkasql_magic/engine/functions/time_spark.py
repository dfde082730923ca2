"""ksqlDB's date, time and timestamp functions. A time unit is a bare word
(`TIMESTAMPADD(HOURS, 2, ts)`): the type checker reads it (`typecheck.time_units`), the build
its width."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...sql import ast
from ...typecheck.time_units import TIME_UNITS
from .builders_spark import Builder, Function, simple

_DAY_MS = 86_400_000


def _unit_ms(exprs: Sequence[ast.Expr]) -> int:
    return TIME_UNITS[exprs[0].name.upper()]


def _date_shift(sign: int) -> Builder:
    """DATEADD/DATESUB: the interval in whole days (ksqlDB converts the unit to days)."""
    def build(ctx, args, exprs):
        days = (args[1].cast("bigint") * F.lit(_unit_ms(exprs)) / F.lit(_DAY_MS)).cast("int")
        return F.date_add(args[2], days * F.lit(sign))
    return build


def _timestamp_shift(sign: int) -> Builder:
    def build(ctx, args, exprs):
        shift = args[1].cast("bigint") * F.lit(_unit_ms(exprs) * sign)
        return F.timestamp_millis(F.unix_millis(args[2]) + shift)
    return build


def _time_shift(sign: int) -> Builder:
    """TIMEADD/TIMESUB: around the clock, as java.time.LocalTime.plus does."""
    def build(ctx, args, exprs):
        shifted = F.time_to_millis(args[2]) + args[1].cast("bigint") * F.lit(_unit_ms(exprs) * sign)
        return F.time_from_millis(F.pmod(shifted, F.lit(_DAY_MS))).cast("time(3)")
    return build


def date_format(value: Column, pattern: Column) -> Column:
    """Spark's date_format with the pattern as a column (PySpark's wrapper takes only text)."""
    return F.call_function("date_format", value, pattern)


def _format_time(time: Column, pattern: Column) -> Column:
    """The time on 1970-01-01 as a local timestamp, so no time zone moves it."""
    ms = F.time_to_millis(time)
    seconds = (F.pmod(ms, F.lit(60_000)) / F.lit(1000)).cast("decimal(5,3)")
    local = F.make_timestamp_ntz(F.lit(1970), F.lit(1), F.lit(1), F.hour(time), F.minute(time), seconds)
    return date_format(local, pattern)


def _parse_time(ctx, args, exprs) -> Column:
    text, pattern = args
    parsed = F.try_to_time(text, pattern).cast("time(3)")
    ctx.fail(text.isNotNull() & pattern.isNotNull() & parsed.isNull(),
             F.concat(F.lit("Failed to parse time '"), text, F.lit("' with formatter '"), pattern, F.lit("'")))
    return parsed


def _parsed(text: Column, pattern: Column) -> Column:
    return F.try_to_timestamp(text, pattern)


def _in_zone(parsed: Column, zone: Column | None) -> Column:
    """A local time read in `zone` as the instant it names (None: UTC)."""
    return parsed if zone is None else F.to_utc_timestamp(parsed, zone)


def _timestamp_to_string(ms: Column, fmt: Column, tz: Column | None = None) -> Column:
    ts = F.timestamp_millis(ms)
    return date_format(ts if tz is None else F.from_utc_timestamp(ts, tz), fmt)


FUNCTIONS: dict[str, Function] = {
    "UNIX_TIMESTAMP": Function(lambda ctx, a, e: F.unix_millis(a[0]) if a else F.unix_millis(F.current_timestamp()), 0, 1),
    "UNIX_DATE": Function(lambda ctx, a, e: F.unix_date(a[0]) if a else F.unix_date(F.current_date()), 0, 1),
    "FROM_UNIXTIME": Function(simple(F.timestamp_millis), 1, 1),
    "TIMESTAMPTOSTRING": Function(simple(_timestamp_to_string), 2, 3),
    "FORMAT_TIMESTAMP": Function(simple(lambda ts, fmt, tz=None: date_format(
        ts if tz is None else F.from_utc_timestamp(ts, tz), fmt)), 2, 3),
    "PARSE_TIMESTAMP": Function(simple(lambda s, fmt, tz=None: _in_zone(_parsed(s, fmt), tz)), 2, 3),
    "STRINGTOTIMESTAMP": Function(simple(lambda s, fmt, tz=None: F.unix_millis(_in_zone(_parsed(s, fmt), tz))), 2, 3),
    "DATEADD": Function(_date_shift(1), 3, 3),
    "DATESUB": Function(_date_shift(-1), 3, 3),
    "TIMESTAMPADD": Function(_timestamp_shift(1), 3, 3),
    "TIMESTAMPSUB": Function(_timestamp_shift(-1), 3, 3),
    "CONVERT_TZ": Function(simple(lambda ts, src, dst: F.from_utc_timestamp(F.to_utc_timestamp(ts, src), dst)), 3, 3),
    "FORMAT_DATE": Function(simple(date_format), 2, 2),
    "PARSE_DATE": Function(simple(lambda s, fmt: F.to_date(_parsed(s, fmt))), 2, 2),
    "FROM_DAYS": Function(simple(F.date_from_unix_date), 1, 1),
    "DATETOSTRING": Function(simple(lambda days, fmt: date_format(F.date_from_unix_date(days), fmt)), 2, 2),
    "STRINGTODATE": Function(simple(lambda s, fmt: F.unix_date(F.to_date(_parsed(s, fmt)))), 2, 2),
    "PARSE_TIME": Function(_parse_time, 2, 2),
    "FORMAT_TIME": Function(simple(_format_time), 2, 2),
    "TIMEADD": Function(_time_shift(1), 3, 3),
    "TIMESUB": Function(_time_shift(-1), 3, 3),
}
