"""The time units some of ksqlDB's date and time functions take.

A time unit is written as a bare word (`TIMESTAMPADD(HOURS, 2, ts)`): the checker types such
an argument as TIMEUNIT instead of resolving it as a column, and the build reads its width.
"""

from __future__ import annotations

from ..sql import ast

#: ksqlDB's time units (Java's TimeUnit) -> milliseconds.
TIME_UNITS: dict[str, int] = {
    "MILLISECONDS": 1, "SECONDS": 1_000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000,
}

#: Functions whose first argument is a time unit.
UNIT_FUNCTIONS = frozenset({"DATEADD", "DATESUB", "TIMESTAMPADD", "TIMESTAMPSUB", "TIMEADD", "TIMESUB"})

TIMEUNIT = ast.Type("TIMEUNIT")


def time_unit(name: str, index: int, expr: ast.Expr) -> str | None:
    """The unit a call's argument names when it is a time-unit argument, else None."""
    if index == 0 and name in UNIT_FUNCTIONS and isinstance(expr, ast.ColumnRef) and expr.qualifier is None \
            and expr.name.upper() in TIME_UNITS:
        return expr.name.upper()
    return None
