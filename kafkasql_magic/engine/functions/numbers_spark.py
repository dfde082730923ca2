"""ksqlDB's numeric functions (DOUBLE results where ksqlDB gives them) and GEO_DISTANCE."""

from __future__ import annotations

import math

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...errors import StatementError
from .builders_spark import Function, simple, text_option


def _truncate(ctx, args, exprs) -> Column:
    """Toward zero, to `places` decimals (negative: left of the point). One argument gives a
    BIGINT (a DECIMAL stays DECIMAL); a DOUBLE with places stays DOUBLE."""
    value, kind = args[0], ctx.spark_type(exprs[0], args[0])
    if len(args) == 1 and not isinstance(kind, T.DecimalType):
        return value.cast("bigint")  # Java's longValue(): toward zero
    exact = value if isinstance(kind, T.DecimalType) else value.cast("decimal(38,10)")
    places = args[1] if len(args) > 1 else F.lit(0)
    cut = F.when(exact >= 0, F.floor(exact, places)).otherwise(F.ceil(exact, places))
    return cut.cast(kind)


#: GEO_DISTANCE's units -> the earth's radius in them (ksqlDB's values).
EARTH_RADIUS = {"KM": 6371.0, "KILOMETER": 6371.0, "KILOMETERS": 6371.0, "MI": 3959.0, "MILE": 3959.0,
                "MILES": 3959.0}


def _geo_distance(ctx, args, exprs) -> Column:
    """The great-circle (haversine) distance, in kilometers unless a unit says miles."""
    unit = text_option(exprs[4], "GEO_DISTANCE's unit").upper() if len(exprs) > 4 else "KM"
    if unit not in EARTH_RADIUS:
        raise StatementError(f"GEO_DISTANCE unit must be one of: KM, KILOMETERS, MI, MILES; got '{unit}'.")
    lat1, lon1, lat2, lon2 = (F.radians(a.cast("double")) for a in args[:4])
    a = F.pow(F.sin((lat2 - lat1) / 2), 2) + F.pow(F.sin((lon2 - lon1) / 2), 2) * F.cos(lat1) * F.cos(lat2)
    return F.lit(2.0) * F.asin(F.sqrt(a)) * F.lit(EARTH_RADIUS[unit])



FUNCTIONS: dict[str, Function] = {
    "ABS": Function(simple(F.abs), 1, 1),
    "CEIL": Function(simple(F.ceil), 1, 1),
    "FLOOR": Function(simple(F.floor), 1, 1),
    "SQRT": Function(simple(F.sqrt), 1, 1),
    "EXP": Function(simple(F.exp), 1, 1),
    "LN": Function(simple(F.log), 1, 1),
    "SIGN": Function(simple(F.signum), 1, 1),
    "GREATEST": Function(simple(F.greatest), 2, None),
    "LEAST": Function(simple(F.least), 2, None),
    "ROUND": Function(simple(lambda x, d=None: F.round(x, 0 if d is None else d)), 1, 2),
    **{name: Function(simple(fn), 1, 1) for name, fn in (
        ("ACOS", F.acos), ("ASIN", F.asin), ("ATAN", F.atan), ("COS", F.cos), ("COSH", F.cosh), ("COT", F.cot),
        ("SIN", F.sin), ("SINH", F.sinh), ("TAN", F.tan), ("TANH", F.tanh), ("DEGREES", F.degrees),
        ("RADIANS", F.radians), ("CBRT", F.cbrt))},
    "ATAN2": Function(simple(F.atan2), 2, 2),
    "POWER": Function(simple(F.pow), 2, 2),
    "LOG": Function(simple(lambda a, b=None: F.log(a) if b is None else F.log(a, b)), 1, 2),
    "PI": Function(lambda ctx, a, e: F.lit(math.pi), 0, 0),
    "RANDOM": Function(lambda ctx, a, e: F.rand(), 0, 0),
    "TRUNC": Function(_truncate, 1, 2),
    "GEO_DISTANCE": Function(_geo_distance, 4, 5),
}
