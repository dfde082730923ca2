"""Signatures of ksqlDB's date/time, JSON, map, URL, masking and geo functions (the rest of
its scalar catalogue after `signatures.SCALAR`), and the time units some of them take.

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


_MASK_OPTIONS = ", STRING upper, STRING lower, STRING digit, STRING other"

SCALAR_MORE: dict[str, list[str]] = {
    # dates and timestamps
    "DATEADD": ["DATEADD(TIMEUNIT unit, INT interval, DATE date) -> DATE"],
    "DATESUB": ["DATESUB(TIMEUNIT unit, INT interval, DATE date) -> DATE"],
    "TIMESTAMPADD": ["TIMESTAMPADD(TIMEUNIT unit, BIGINT interval, TIMESTAMP timestamp) -> TIMESTAMP"],
    "TIMESTAMPSUB": ["TIMESTAMPSUB(TIMEUNIT unit, BIGINT interval, TIMESTAMP timestamp) -> TIMESTAMP"],
    "CONVERT_TZ": ["CONVERT_TZ(TIMESTAMP timestamp, STRING fromTimeZone, STRING toTimeZone) -> TIMESTAMP"],
    "FORMAT_DATE": ["FORMAT_DATE(DATE date, STRING formatPattern) -> STRING"],
    "PARSE_DATE": ["PARSE_DATE(STRING formattedDate, STRING formatPattern) -> DATE"],
    "FROM_DAYS": ["FROM_DAYS(INT days) -> DATE"],
    "DATETOSTRING": ["DATETOSTRING(INT days, STRING formatPattern) -> STRING"],
    "STRINGTODATE": ["STRINGTODATE(STRING formattedDate, STRING formatPattern) -> INT"],
    "PARSE_TIME": ["PARSE_TIME(STRING formattedTime, STRING formatPattern) -> TIME"],
    "FORMAT_TIME": ["FORMAT_TIME(TIME time, STRING formatPattern) -> STRING"],
    "TIMEADD": ["TIMEADD(TIMEUNIT unit, INT interval, TIME time) -> TIME"],
    "TIMESUB": ["TIMESUB(TIMEUNIT unit, INT interval, TIME time) -> TIME"],
    # JSON
    "JSON_ARRAY_CONTAINS": ["JSON_ARRAY_CONTAINS(STRING jsonArray, T val) -> BOOLEAN"],
    "JSON_CONCAT": ["JSON_CONCAT(STRING json, STRING... others) -> STRING"],
    "IS_JSON_STRING": ["IS_JSON_STRING(STRING json) -> BOOLEAN"],
    "JSON_ARRAY_LENGTH": ["JSON_ARRAY_LENGTH(STRING json) -> INT"],
    "JSON_KEYS": ["JSON_KEYS(STRING json) -> ARRAY<STRING>"],
    "JSON_ITEMS": ["JSON_ITEMS(STRING json) -> ARRAY<STRING>"],
    "JSON_RECORDS": ["JSON_RECORDS(STRING json) -> MAP<STRING, STRING>"],
    "TO_JSON_STRING": ["TO_JSON_STRING(T value) -> STRING"],
    # maps and lists
    "SPLIT_TO_MAP": ["SPLIT_TO_MAP(STRING input, STRING entryDelimiter, STRING kvDelimiter) -> MAP<STRING, STRING>"],
    "MAP_UNION": ["MAP_UNION(MAP<STRING, V> first, MAP<STRING, V> second) -> MAP<STRING, V>"],
    "FIELD": ["FIELD(STRING str, STRING... args) -> INT", "FIELD(STRING str, ARRAY<STRING> args) -> INT"],
    "ENTRIES": [f"ENTRIES(MAP<STRING, {t}> map, BOOLEAN sorted) -> ARRAY<STRUCT<K STRING, V {t}>>"
                for t in ("INT", "BIGINT", "DOUBLE", "BOOLEAN", "STRING")],
    "GENERATE_SERIES": [f"GENERATE_SERIES({t} start, {t} end{step}) -> ARRAY<{t}>"
                        for t in ("INT", "BIGINT") for step in ("", ", INT step")],
    "ARRAY_SORT": ["ARRAY_SORT(ARRAY<T> array) -> ARRAY<T>", "ARRAY_SORT(ARRAY<T> array, STRING direction) -> ARRAY<T>"],
    # numbers and hashes
    "TRUNC": ["TRUNC(INT val) -> BIGINT", "TRUNC(BIGINT val) -> BIGINT", "TRUNC(DOUBLE val) -> BIGINT",
              "TRUNC(DOUBLE val, INT decimalPlaces) -> DOUBLE", "TRUNC(DECIMAL val) -> DECIMAL",
              "TRUNC(DECIMAL val, INT decimalPlaces) -> DECIMAL"],
    "MD5": ["MD5(STRING input) -> STRING"],
    # strings
    "ENCODE": ["ENCODE(STRING input, STRING inputEncoding, STRING outputEncoding) -> STRING"],
    "REGEXP_EXTRACT_ALL": ["REGEXP_EXTRACT_ALL(STRING pattern, STRING input) -> ARRAY<STRING>",
                           "REGEXP_EXTRACT_ALL(STRING pattern, STRING input, INT group) -> ARRAY<STRING>"],
    "REGEXP_SPLIT_TO_ARRAY": ["REGEXP_SPLIT_TO_ARRAY(STRING input, STRING regex) -> ARRAY<STRING>"],
    **{name: [f"{name}(STRING input, INT numChars) -> STRING", f"{name}(STRING input, INT numChars{_MASK_OPTIONS}) -> STRING"]
       for name in ("MASK_LEFT", "MASK_RIGHT", "MASK_KEEP_LEFT", "MASK_KEEP_RIGHT")},
    # URLs
    "URL_ENCODE_PARAM": ["URL_ENCODE_PARAM(STRING input) -> STRING"],
    "URL_DECODE_PARAM": ["URL_DECODE_PARAM(STRING input) -> STRING"],
    "URL_EXTRACT_PORT": ["URL_EXTRACT_PORT(STRING input) -> INT"],
    # geography
    "GEO_DISTANCE": ["GEO_DISTANCE(DOUBLE lat1, DOUBLE lon1, DOUBLE lat2, DOUBLE lon2) -> DOUBLE",
                     "GEO_DISTANCE(DOUBLE lat1, DOUBLE lon1, DOUBLE lat2, DOUBLE lon2, STRING unit) -> DOUBLE"],
}
