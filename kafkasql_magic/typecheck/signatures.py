"""Function signatures as a table: ksql name -> accepted argument types -> result type.

Every function the planner can run (functions.py, aggregates.py) is listed here as ksqlDB lists
it in its "Valid alternatives are:" message, `NAME(TYPE name, ...) -> RESULT`, so adding a
function is adding a line. Type patterns: a ksql type (INT, BIGINT, DOUBLE, DECIMAL of any
precision, STRING, BOOLEAN, BYTES, DATE, TIME, TIMESTAMP), ARRAY<p>, MAP<p, p>, STRUCT (any
struct) or one capital letter (T, K, V): a type variable, bound by the arguments it meets. A
last parameter written `TYPE...` is variadic. Numeric arguments widen INT -> BIGINT -> DECIMAL
-> DOUBLE to fit a parameter, as ksqlDB's implicit casts do; a NULL argument fits any type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..sql import ast

NUMERIC_RANK = {"INT": 0, "BIGINT": 1, "DECIMAL": 2, "DOUBLE": 3}
#: Integer types as decimals, to mix them with DECIMAL operands (ksqlDB's rule).
DECIMAL_OF = {"INT": ast.Type("DECIMAL", 10, 0), "BIGINT": ast.Type("DECIMAL", 19, 0)}
MAX_DECIMAL_PRECISION = 38


def is_numeric(t: ast.Type | None) -> bool:
    return t is not None and t.name in NUMERIC_RANK


def as_decimal(t: ast.Type) -> ast.Type:
    return DECIMAL_OF.get(t.name, t)


def decimal(precision: int, scale: int) -> ast.Type:
    """DECIMAL(precision, scale), capped at 38 digits (keeping the integer digits first)."""
    if precision > MAX_DECIMAL_PRECISION:
        scale = max(0, scale - (precision - MAX_DECIMAL_PRECISION))
        precision = MAX_DECIMAL_PRECISION
    return ast.Type("DECIMAL", precision, min(scale, precision))


def widen(a: ast.Type | None, b: ast.Type | None) -> ast.Type | None | bool:
    """The type both `a` and `b` fit in (None when both are NULL), or False when there is none."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if is_numeric(a) and is_numeric(b):
        if "DOUBLE" in (a.name, b.name):
            return ast.Type("DOUBLE")
        if "DECIMAL" in (a.name, b.name):
            a, b = as_decimal(a), as_decimal(b)
            scale = max(a.scale or 0, b.scale or 0)
            digits = max((a.precision or 10) - (a.scale or 0), (b.precision or 10) - (b.scale or 0))
            return decimal(digits + scale, scale)
        return a if NUMERIC_RANK[a.name] >= NUMERIC_RANK[b.name] else b
    if a.name == b.name == "ARRAY":
        element = widen(a.element, b.element)
        return False if element is False else ast.Type("ARRAY", element=element)
    if a.name == b.name == "MAP":
        key, value = widen(a.key, b.key), widen(a.value, b.value)
        return False if False in (key, value) else ast.Type("MAP", key=key, value=value)
    if a.name == b.name and a.name in ("STRUCT",) and [n.lower() for n, _ in a.fields] == \
            [n.lower() for n, _ in b.fields]:
        return a
    return False


# ---------------------------------------------------------------- signatures
@dataclass(frozen=True)
class Pattern:
    """A parameter or result type: `name` is a ksql type name, ARRAY, MAP, STRUCT or a variable."""

    name: str
    args: tuple[Pattern, ...] = ()

    @property
    def is_variable(self) -> bool:
        return len(self.name) == 1


@dataclass(frozen=True)
class Signature:
    """One overload: `text` is how "Valid alternatives are:" lists it."""

    text: str
    params: tuple[Pattern, ...]
    result: Pattern
    variadic: bool = False


_SIGNATURE = re.compile(r"^(\w+)\((.*)\) -> (.+)$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside <...>."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    rest = text[start:].strip()
    return parts + [rest] if rest else parts


def _pattern(text: str) -> Pattern:
    text = text.strip()
    if text.endswith(">"):
        name, inner = text[:-1].split("<", 1)
        if name.strip() == "STRUCT":  # STRUCT<K STRING, V T>: a field's name, its type under it
            fields = (p.split(" ", 1) for p in _split_top(inner))
            return Pattern("STRUCT", tuple(Pattern(n, (_pattern(t),)) for n, t in fields))
        return Pattern(name.strip(), tuple(_pattern(p) for p in _split_top(inner)))
    return Pattern(text)


def signature(text: str) -> Signature:
    """Parse `NAME(TYPE name, TYPE... name) -> RESULT`."""
    name, params, result = _SIGNATURE.match(text).groups()
    parsed, variadic = [], False
    for param in _split_top(params):
        type_text = param.rsplit(" ", 1)[0] if " " in param and not param.endswith(">") else param
        variadic = type_text.endswith("...")
        parsed.append(_pattern(type_text.removesuffix("...")))
    return Signature(text.split(" -> ")[0], tuple(parsed), _pattern(result), variadic)


_NUMBERS = ("INT", "BIGINT", "DOUBLE", "DECIMAL")


def _each_number(template: str, result: str | None = None, numbers=_NUMBERS) -> list[str]:
    """One line per numeric type: `{T}` in `template` (and `result`, default the same type)."""
    return [template.format(T=n) + f" -> {result or n}" for n in numbers]


#: Scalar functions: ksql name -> overloads, tried in order.
SCALAR: dict[str, list[str]] = {
    "ABS": _each_number("ABS({T} val)"),
    "CEIL": _each_number("CEIL({T} val)"),
    "FLOOR": _each_number("FLOOR({T} val)"),
    "SQRT": _each_number("SQRT({T} val)", "DOUBLE"),
    "EXP": _each_number("EXP({T} val)", "DOUBLE"),
    "LN": _each_number("LN({T} val)", "DOUBLE"),
    "SIGN": _each_number("SIGN({T} val)", "INT"),
    "ROUND": ["ROUND(INT val) -> BIGINT", "ROUND(BIGINT val) -> BIGINT", "ROUND(DOUBLE val) -> BIGINT",
              "ROUND(DOUBLE val, INT decimalPlaces) -> DOUBLE", "ROUND(DECIMAL val) -> DECIMAL",
              "ROUND(DECIMAL val, INT decimalPlaces) -> DECIMAL"],
    "GREATEST": ["GREATEST(T val, T other, T... others) -> T"],
    "LEAST": ["LEAST(T val, T other, T... others) -> T"],
    "UCASE": ["UCASE(STRING input) -> STRING"],
    "LCASE": ["LCASE(STRING input) -> STRING"],
    "INITCAP": ["INITCAP(STRING input) -> STRING"],
    "LEN": ["LEN(STRING input) -> INT", "LEN(BYTES input) -> INT"],
    "TRIM": ["TRIM(STRING input) -> STRING"],
    "LTRIM": ["LTRIM(STRING input) -> STRING"],
    "RTRIM": ["RTRIM(STRING input) -> STRING"],
    "CONCAT": ["CONCAT(STRING input, STRING... inputs) -> STRING", "CONCAT(BYTES input, BYTES... inputs) -> BYTES"],
    "CONCAT_WS": ["CONCAT_WS(STRING separator, STRING input, STRING... inputs) -> STRING"],
    "SUBSTRING": ["SUBSTRING(STRING str, INT pos) -> STRING", "SUBSTRING(STRING str, INT pos, INT length) -> STRING"],
    "REPLACE": ["REPLACE(STRING str, STRING substring, STRING replacement) -> STRING"],
    "INSTR": ["INSTR(STRING str, STRING substring) -> INT"],
    "SPLIT": ["SPLIT(STRING string, STRING delimiter) -> ARRAY<STRING>"],
    "LPAD": ["LPAD(STRING input, INT length, STRING padding) -> STRING"],
    "RPAD": ["RPAD(STRING input, INT length, STRING padding) -> STRING"],
    "REGEXP_EXTRACT": ["REGEXP_EXTRACT(STRING pattern, STRING input) -> STRING",
                       "REGEXP_EXTRACT(STRING pattern, STRING input, INT group) -> STRING"],
    "REGEXP_REPLACE": ["REGEXP_REPLACE(STRING input, STRING regex, STRING replacement) -> STRING"],
    "COALESCE": ["COALESCE(T first, T... others) -> T"],
    "IFNULL": ["IFNULL(T expression, T altValue) -> T"],
    "NULLIF": ["NULLIF(T expr1, T expr2) -> T"],
    "ARRAY_LENGTH": ["ARRAY_LENGTH(ARRAY<T> array) -> INT"],
    "ARRAY_CONTAINS": ["ARRAY_CONTAINS(ARRAY<T> array, T val) -> BOOLEAN"],
    "MAP_KEYS": ["MAP_KEYS(MAP<K, V> input) -> ARRAY<K>"],
    "MAP_VALUES": ["MAP_VALUES(MAP<K, V> input) -> ARRAY<V>"],
    "ARRAY": ["ARRAY(T... elements) -> ARRAY<T>"],
    "MAP": ["MAP(K key, V value) -> MAP<K, V>"],  # MAP(k := v, ...): the checker types it pair by pair
    "EXTRACTJSONFIELD": ["EXTRACTJSONFIELD(STRING input, STRING path) -> STRING"],
    "UNIX_TIMESTAMP": ["UNIX_TIMESTAMP() -> BIGINT", "UNIX_TIMESTAMP(TIMESTAMP timestamp) -> BIGINT"],
    "UNIX_DATE": ["UNIX_DATE() -> INT", "UNIX_DATE(DATE date) -> INT"],
    "FROM_UNIXTIME": ["FROM_UNIXTIME(BIGINT milliseconds) -> TIMESTAMP"],
    "TIMESTAMPTOSTRING": ["TIMESTAMPTOSTRING(BIGINT epochMilli, STRING formatPattern) -> STRING",
                          "TIMESTAMPTOSTRING(BIGINT epochMilli, STRING formatPattern, STRING timeZone) -> STRING"],
    "FORMAT_TIMESTAMP": ["FORMAT_TIMESTAMP(TIMESTAMP timestamp, STRING formatPattern) -> STRING",
                         "FORMAT_TIMESTAMP(TIMESTAMP timestamp, STRING formatPattern, STRING timeZone) -> STRING"],
    "PARSE_TIMESTAMP": ["PARSE_TIMESTAMP(STRING formattedTimestamp, STRING formatPattern) -> TIMESTAMP",
                        "PARSE_TIMESTAMP(STRING formattedTimestamp, STRING formatPattern, STRING timeZone) -> TIMESTAMP"],
    "STRINGTOTIMESTAMP": ["STRINGTOTIMESTAMP(STRING formattedTimestamp, STRING formatPattern) -> BIGINT",
                          "STRINGTOTIMESTAMP(STRING formattedTimestamp, STRING formatPattern, STRING timeZone) -> BIGINT"],
    "INT_FROM_BYTES": ["INT_FROM_BYTES(BYTES value) -> INT", "INT_FROM_BYTES(BYTES value, STRING byteOrder) -> INT"],
    "BIGINT_FROM_BYTES": ["BIGINT_FROM_BYTES(BYTES value) -> BIGINT",
                          "BIGINT_FROM_BYTES(BYTES value, STRING byteOrder) -> BIGINT"],
    "DOUBLE_FROM_BYTES": ["DOUBLE_FROM_BYTES(BYTES value) -> DOUBLE",
                          "DOUBLE_FROM_BYTES(BYTES value, STRING byteOrder) -> DOUBLE"],
    "FROM_BYTES": ["FROM_BYTES(BYTES bytes, STRING encoding) -> STRING"],
    "TO_BYTES": ["TO_BYTES(STRING string, STRING encoding) -> BYTES"],
    "CONVERT_FROM": ["CONVERT_FROM(BYTES bytes, STRING encoding) -> STRING"],
    **{name: _each_number(name + "({T} value)", "DOUBLE", ("INT", "BIGINT", "DOUBLE"))
       for name in ("ACOS", "ASIN", "ATAN", "COS", "COSH", "COT", "SIN", "SINH", "TAN", "TANH", "DEGREES",
                    "RADIANS", "CBRT")},
    "ATAN2": ["ATAN2(DOUBLE y, DOUBLE x) -> DOUBLE"],
    "POWER": ["POWER(DOUBLE base, DOUBLE exponent) -> DOUBLE"],
    "LOG": ["LOG(DOUBLE value) -> DOUBLE", "LOG(DOUBLE base, DOUBLE value) -> DOUBLE"],
    "PI": ["PI() -> DOUBLE"],
    "RANDOM": ["RANDOM() -> DOUBLE"],
    "CHR": ["CHR(INT decimalCode) -> STRING"],
    "UUID": ["UUID() -> STRING"],
    "MASK": ["MASK(STRING input) -> STRING"],
    **{f"URL_EXTRACT_{part}": [f"URL_EXTRACT_{part}(STRING input) -> STRING"]
       for part in ("HOST", "PATH", "PROTOCOL", "QUERY", "FRAGMENT")},
    "URL_EXTRACT_PARAMETER": ["URL_EXTRACT_PARAMETER(STRING input, STRING paramName) -> STRING"],
    "ARRAY_DISTINCT": ["ARRAY_DISTINCT(ARRAY<T> array) -> ARRAY<T>"],
    **{name: [f"{name}(ARRAY<T> left, ARRAY<T> right) -> ARRAY<T>"]
       for name in ("ARRAY_EXCEPT", "ARRAY_INTERSECT", "ARRAY_UNION", "ARRAY_CONCAT")},
    "ARRAY_MAX": ["ARRAY_MAX(ARRAY<T> array) -> T"],
    "ARRAY_MIN": ["ARRAY_MIN(ARRAY<T> array) -> T"],
    "ARRAY_REMOVE": ["ARRAY_REMOVE(ARRAY<T> array, T victim) -> ARRAY<T>"],
    "ARRAY_JOIN": ["ARRAY_JOIN(ARRAY<T> array) -> STRING", "ARRAY_JOIN(ARRAY<T> array, STRING delimiter) -> STRING"],
    "SLICE": ["SLICE(ARRAY<T> array, INT from, INT to) -> ARRAY<T>"],
    "ELT": ["ELT(INT n, STRING arg, STRING... args) -> STRING"],
    "AS_MAP": ["AS_MAP(ARRAY<K> keys, ARRAY<V> values) -> MAP<K, V>"],
    "AS_VALUE": ["AS_VALUE(T val) -> T"],
    "HEADERS_TO_MAP": ["HEADERS_TO_MAP(ARRAY<STRUCT> headers) -> MAP<STRING, BYTES>"],
}

_MASK_OPTIONS = ", STRING upper, STRING lower, STRING digit, STRING other"

SCALAR.update({  # dates and times, JSON, maps and lists, URLs, masking, geography
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
})

_COMPARABLE = ("INT", "BIGINT", "DOUBLE", "DECIMAL", "STRING", "BYTES", "DATE", "TIME", "TIMESTAMP")

#: Aggregate functions (GROUP BY): ksql name -> overloads. COUNT also takes `*`.
AGGREGATE: dict[str, list[str]] = {
    "COUNT": ["COUNT(T col) -> BIGINT"],
    "SUM": _each_number("SUM({T} col)"),
    "AVG": _each_number("AVG({T} col)", "DOUBLE", ("INT", "BIGINT", "DOUBLE")) + ["AVG(DECIMAL col) -> DECIMAL"],
    "MIN": [f"MIN({t} val) -> {t}" for t in _COMPARABLE],
    "MAX": [f"MAX({t} val) -> {t}" for t in _COMPARABLE],
    "COUNT_DISTINCT": ["COUNT_DISTINCT(T col) -> BIGINT"],
    "COLLECT_LIST": ["COLLECT_LIST(T col) -> ARRAY<T>"],
    "ARRAY_AGG": ["ARRAY_AGG(T col) -> ARRAY<T>"],
    "LIST_AGG": ["LIST_AGG(T col) -> ARRAY<T>"],
    "MAP_AGG": ["MAP_AGG(STRING k, T v) -> MAP<STRING, T>"],
    "STRING_AGG": ["STRING_AGG(STRING val, STRING delimiter) -> STRING"],
    "COLLECT_SET": ["COLLECT_SET(T col) -> ARRAY<T>"],
    **{name: [f"{name}(T val) -> T", f"{name}(T val, BOOLEAN ignoreNulls) -> T",
              f"{name}(T val, INT {n}) -> ARRAY<T>", f"{name}(T val, INT {n}, BOOLEAN ignoreNulls) -> ARRAY<T>"]
       for name, n in (("LATEST_BY_OFFSET", "latestN"), ("EARLIEST_BY_OFFSET", "earliestN"))},
    "TOPK": [f"TOPK({t} val, INT k) -> ARRAY<{t}>" for t in _COMPARABLE] + [  # other columns ride along
        f"TOPK(T val, {', '.join(f'{v} col{i}' for i, v in enumerate('ABCD'[:n]))}, INT k) -> "
        f"ARRAY<STRUCT<sort_col T, {', '.join(f'col{i} {v}' for i, v in enumerate('ABCD'[:n]))}>>"
        for n in range(1, 5)],
    "TOPKDISTINCT": [f"TOPKDISTINCT({t} val, INT k) -> ARRAY<{t}>" for t in _COMPARABLE],
}

#: Aggregates that accept `*` (COUNT(*)).
STAR_AGGREGATES = frozenset({"COUNT"})

SIGNATURES: dict[str, tuple[Signature, ...]] = {
    name: tuple(signature(text) for text in texts) for name, texts in {**SCALAR, **AGGREGATE}.items()
}


# ---------------------------------------------------------------- matching
def _fits(pattern: Pattern, arg: ast.Type | None, bound: dict, casts: bool) -> bool:
    """Whether `arg` fits `pattern`, binding type variables in `bound` (widening them if `casts`)."""
    if arg is None:
        return True
    if pattern.is_variable:
        if pattern.name not in bound:
            bound[pattern.name] = arg
            return True
        wider = widen(bound[pattern.name], arg) if casts else (arg if arg == bound[pattern.name] else False)
        if wider is False:
            return False
        bound[pattern.name] = wider
        return True
    if pattern.name == "ARRAY":
        return arg.name == "ARRAY" and _fits(pattern.args[0], arg.element, bound, casts)
    if pattern.name == "MAP":
        return arg.name == "MAP" and _fits(pattern.args[0], arg.key, bound, casts) \
            and _fits(pattern.args[1], arg.value, bound, casts)
    if arg.name == pattern.name:
        return True
    return casts and is_numeric(arg) and pattern.name in NUMERIC_RANK \
        and NUMERIC_RANK[arg.name] <= NUMERIC_RANK[pattern.name]


def _result(pattern: Pattern, bound: dict, args: list) -> ast.Type | None:
    if pattern.is_variable:
        return bound.get(pattern.name)
    if pattern.name == "ARRAY":
        return ast.Type("ARRAY", element=_result(pattern.args[0], bound, args))
    if pattern.name == "MAP":
        return ast.Type("MAP", key=_result(pattern.args[0], bound, args), value=_result(pattern.args[1], bound, args))
    if pattern.name == "STRUCT" and pattern.args:
        return ast.Type("STRUCT", fields=tuple((f.name, _result(f.args[0], bound, args)) for f in pattern.args))
    if pattern.name == "DECIMAL":  # the decimal argument's precision and scale
        found = next((a for a in args if a is not None and a.name == "DECIMAL"), None)
        return found or decimal(MAX_DECIMAL_PRECISION, 0)
    return ast.Type(pattern.name)


def _accepts(sig: Signature, args: list, casts: bool) -> dict | None:
    params = list(sig.params)
    if sig.variadic:
        if len(args) < len(params) - 1:
            return None
        params = params[:-1] + [params[-1]] * (len(args) - len(params) + 1)
    if len(args) != len(params):
        return None
    bound: dict = {}
    return bound if all(_fits(p, a, bound, casts) for p, a in zip(params, args)) else None


@dataclass(frozen=True)
class Resolved:
    """The overload chosen for a call: its result type (None: NULL, no type known)."""

    signature: Signature
    result: ast.Type | None


def resolve(name: str, args: list[ast.Type | None]) -> Resolved | None:
    """The first overload of `name` that takes `args` exactly, else the first that takes them
    after widening numbers; None if none does. KeyError for an unknown function."""
    overloads = SIGNATURES[name]
    for casts in (False, True):
        for sig in overloads:
            bound = _accepts(sig, args, casts)
            if bound is not None:
                return Resolved(sig, _result(sig.result, bound, args))
    return None


def is_known(name: str) -> bool:
    """In the signature table (of every dialect: `Dialect.absent_functions` says which one lacks it)."""
    return name in SIGNATURES
