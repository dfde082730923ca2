"""PostgreSQL's date_trunc(unit, timestamp), as Materialize users bucket time with it
(`GROUP BY date_trunc('minute', ts)`): the units and spellings PostgreSQL takes, a week starting
on Monday, a century and a millennium starting in their year 1 (2001 for the 21st)."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...errors import StatementError
from ...sql import ast
from .builders_spark import Context, Function, text_option

#: a unit's spellings -> Spark's date_trunc unit, or the years a longer period spans
_UNITS: dict[str, str | int] = {}
for _names, _unit in ((("microsecond", "microseconds", "us", "usec", "usecs"), "MICROSECOND"),
                      (("millisecond", "milliseconds", "ms", "msec", "msecs"), "MILLISECOND"),
                      (("second", "seconds", "s", "sec", "secs"), "SECOND"),
                      (("minute", "minutes", "m", "min", "mins"), "MINUTE"),
                      (("hour", "hours", "h", "hr", "hrs"), "HOUR"),
                      (("day", "days", "d"), "DAY"),
                      (("week", "weeks", "w"), "WEEK"),
                      (("month", "months", "mon", "mons"), "MONTH"),
                      (("quarter", "qtr"), "QUARTER"),
                      (("year", "years", "y", "yr", "yrs"), "YEAR"),
                      (("decade", "decades"), 10),
                      (("century", "centuries"), 100),
                      (("millennium", "millennia", "millenniums"), 1000)):
    for _name in _names:
        _UNITS[_name] = _unit


def _date_trunc(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    given = text_option(exprs[0], "date_trunc's unit")
    unit = _UNITS.get(given.lower())
    if unit is None:
        raise StatementError(f'unit "{given}" not recognized for type timestamp')
    ts = args[1].cast("timestamp")
    if isinstance(unit, str):
        return F.date_trunc(unit, ts)
    year = F.year(ts)
    first = F.floor(year / unit) * unit if unit == 10 else F.floor((year - 1) / unit) * unit + 1
    zero = F.lit(0)
    return F.when(ts.isNotNull(), F.make_timestamp(first.cast("int"), F.lit(1), F.lit(1), zero, zero, zero))


FUNCTIONS: dict[str, Function] = {"DATE_TRUNC": Function(_date_trunc, 2, 2)}
