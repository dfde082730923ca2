"""ksqlDB's date/time, JSON, map, URL, masking and geo functions as Spark expressions (the
rest of its scalar catalogue after `functions.FUNCTIONS`), as a table: name -> (builder,
fewest arguments, most arguments or None). Signatures: `typecheck/signatures_more.py`.

Each follows ksqlDB's documented results, NULL in gives NULL out unless ksqlDB says
otherwise (FIELD and IS_JSON_STRING answer for NULL too).
"""

from __future__ import annotations

from typing import Callable, Sequence

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...errors import StatementError
from ...sql import ast
from ...typecheck.signatures_more import TIME_UNITS

Builder = Callable[..., Column]  # (ctx, args, exprs) -> Column


def _simple(fn: Callable[..., Column]) -> Builder:
    return lambda ctx, args, exprs: fn(*args)


def _text(expr: ast.Expr, what: str) -> str:
    if not isinstance(expr, ast.Literal) or not isinstance(expr.value, str):
        raise StatementError(f"{what} must be a string literal.")
    return expr.value


def _quoted(delimiter: Column) -> Column:
    """A literal delimiter as a Java regex (Spark splits on a regex, ksqlDB on text)."""
    return F.concat(F.lit("\\Q"), delimiter, F.lit("\\E"))


# ---------------------------------------------------------------- dates and timestamps
def _unit_ms(exprs: Sequence[ast.Expr]) -> int:
    return TIME_UNITS[exprs[0].name.upper()]


def _date_shift(sign: int) -> Builder:
    """DATEADD/DATESUB: the interval in whole days (ksqlDB converts the unit to days)."""
    def build(ctx, args, exprs):
        days = (args[1].cast("bigint") * F.lit(_unit_ms(exprs)) / F.lit(86_400_000)).cast("int")
        return F.date_add(args[2], days * F.lit(sign))
    return build


def _timestamp_shift(sign: int) -> Builder:
    def build(ctx, args, exprs):
        shift = args[1].cast("bigint") * F.lit(_unit_ms(exprs) * sign)
        return F.timestamp_millis(F.unix_millis(args[2]) + shift)
    return build


_DAY_MS = 86_400_000


def _time_shift(sign: int) -> Builder:
    """TIMEADD/TIMESUB: around the clock, as java.time.LocalTime.plus does."""
    def build(ctx, args, exprs):
        shifted = F.time_to_millis(args[2]) + args[1].cast("bigint") * F.lit(_unit_ms(exprs) * sign)
        return F.time_from_millis(F.pmod(shifted, F.lit(_DAY_MS))).cast("time(3)")
    return build


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


def date_format(value: Column, pattern: Column) -> Column:
    """Spark's date_format with the pattern as a column (PySpark's wrapper takes only text)."""
    return F.call_function("date_format", value, pattern)


def _parsed(text: Column, pattern: Column) -> Column:
    return F.try_to_timestamp(text, pattern)


# ---------------------------------------------------------------- JSON
def _json_values(json: Column, shape: str) -> Column:
    """A JSON object's values (`map`) or array's items (`array`) as JSON text each (strings
    keep their quotes, as ksqlDB's JSON_RECORDS / JSON_ITEMS give them)."""
    parsed = F.from_json(json, f"{shape}<{'string, ' if shape == 'map' else ''}variant>")
    if shape == "map":
        return F.transform_values(parsed, lambda k, v: F.to_json(v))
    return F.transform(parsed, lambda v: F.to_json(v))


def _json_array_contains(ctx, args, exprs) -> Column:
    """Whether a JSON array holds the value: a JSON integer matches INT/BIGINT, a JSON float a
    DOUBLE, a string a STRING, a boolean a BOOLEAN, null a NULL (ksqlDB's token rules); text
    that is not an array gives false."""
    json, value = args
    kind = ctx.spark_type(exprs[1], value)
    items = F.try_variant_get(F.try_parse_json(json), "$", "array<variant>")
    shape = lambda v: F.schema_of_variant(v)  # noqa: E731
    if isinstance(kind, T.NullType):
        found = lambda v: F.is_variant_null(v)  # noqa: E731
    elif isinstance(kind, (T.IntegerType, T.LongType)):
        found = lambda v: (shape(v) == "BIGINT") & (F.try_variant_get(v, "$", "bigint") == value)  # noqa: E731
    elif isinstance(kind, T.DoubleType):
        found = lambda v: (shape(v).startswith("DECIMAL") | (shape(v) == "DOUBLE")) & (  # noqa: E731
            F.try_variant_get(v, "$", "double") == value)
    elif isinstance(kind, (T.StringType, T.BooleanType)):
        name = "STRING" if isinstance(kind, T.StringType) else "BOOLEAN"
        found = lambda v: (shape(v) == name) & (F.try_variant_get(v, "$", name.lower()) == value)  # noqa: E731
    else:
        return F.when(json.isNotNull(), F.lit(False))
    return F.when(json.isNotNull(), F.coalesce(F.exists(items, lambda v: F.coalesce(found(v), F.lit(False))),
                                              F.lit(False)))


def _json_concat(*texts: Column) -> Column:
    """PostgreSQL's `||` on JSON, as ksqlDB's JSON_CONCAT: objects merge (the last value of a
    key wins, in its first place), anything else concatenates as arrays (a non-array as a
    one-item array); NULL or text that is not JSON gives NULL."""
    parsed = [F.try_parse_json(t) for t in texts]
    objects = [F.from_json(t, "map<string, variant>") for t in texts]
    merged = reduce(lambda a, b: F.map_concat(
        F.transform_values(a, lambda k, v: F.coalesce(F.element_at(b, k), v)),
        F.map_filter(b, lambda k, v: ~F.array_contains(F.map_keys(a), k))), objects)
    items = F.concat(*[F.when(F.schema_of_variant(p).startswith("ARRAY"),
                              F.try_variant_get(p, "$", "array<variant>")).otherwise(F.array(p)) for p in parsed])
    all_objects = reduce(lambda a, b: a & b, [F.schema_of_variant(p).startswith("OBJECT") for p in parsed])
    unknown = reduce(lambda a, b: a | b, [p.isNull() for p in parsed])
    return F.when(~unknown, F.when(all_objects, F.to_json(merged)).otherwise(F.to_json(items)))


def _to_json_string(value: Column) -> Column:
    """Any value as JSON text: wrapped in an array for Spark's to_json, then unwrapped."""
    return F.regexp_extract(F.to_json(F.array(value)), r"^\[(.*)\]$", 1)


# ---------------------------------------------------------------- maps and lists
def _split_to_map(text: Column, entry: Column, kv: Column) -> Column:
    """Entries split on `entry`, each on `kv`; entries without exactly one `kv` are dropped and
    a repeated key keeps its last value, as ksqlDB does."""
    pairs = F.filter(F.transform(F.split(text, _quoted(entry)), lambda e: F.split(e, _quoted(kv))),
                     lambda p: F.size(p) == 2)
    empty = F.create_map().cast("map<string,string>")
    merged = F.aggregate(pairs, empty, lambda acc, p: F.map_concat(
        F.map_filter(acc, lambda k, v: k != p[0]), F.create_map(p[0], p[1])))
    return F.when(text.isNotNull() & entry.isNotNull() & kv.isNotNull(), merged)


def _map_union(first: Column, second: Column) -> Column:
    """The second map's entries win; a NULL map counts as empty unless both are NULL."""
    union = F.map_concat(F.map_filter(first, lambda k, v: ~F.array_contains(F.map_keys(second), k)), second)
    return F.when(first.isNull(), second).when(second.isNull(), first).otherwise(union)


def _field(ctx, args, exprs) -> Column:
    """FIELD: the 1-based position of the first argument among the others (or in an array
    given instead of them), 0 if absent or NULL."""
    if len(args) == 2 and isinstance(ctx.spark_type(exprs[1], args[1]), T.ArrayType):
        return F.coalesce(F.array_position(args[1], args[0]).cast("int"), F.lit(0))
    return F.coalesce(F.array_position(F.array(*args[1:]), args[0]).cast("int"), F.lit(0))


def _entries(values: Column, sorted_: Column) -> Column:
    """A map's entries as structs K, V; sorted by key when asked."""
    entries = F.transform(F.map_entries(values), lambda e: F.struct(e["key"].alias("K"), e["value"].alias("V")))
    return F.when(sorted_, F.array_sort(entries)).otherwise(entries)


def _generate_series(ctx, args, exprs) -> Column:
    """start to end inclusive by step (default 1 or -1 towards end); a zero step or one
    pointing away from end is a processing-log entry and NULL (Spark would fail the query)."""
    start, end = args[:2]
    step = args[2] if len(args) > 2 else F.when(end - start > 0, F.lit(1)).otherwise(F.lit(-1))
    wrong = ((end - start > 0) & (step < 0)) | ((end - start < 0) & (step > 0))
    ctx.fail(step == 0, F.lit("GENERATE_SERIES step cannot be zero"))
    ctx.fail(wrong, F.lit("GENERATE_SERIES step has wrong sign"))
    return F.when((step != 0) & ~wrong, F.sequence(start, end, step.cast(ctx.spark_type(exprs[0], start))))


def _array_sort(ctx, args, exprs) -> Column:
    """Ascending or descending (ASC, ASCENDING, DESC, DESCENDING, any case), NULLs last either
    way; another direction gives NULL."""
    if len(args) == 1:
        return F.array_sort(args[0])
    direction = F.upper(args[1])
    return F.when(direction.isin("ASC", "ASCENDING"), F.array_sort(args[0])) \
        .when(direction.isin("DESC", "DESCENDING"), F.sort_array(args[0], asc=False))


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


# ---------------------------------------------------------------- strings
#: ENCODE's encodings: string -> bytes (input side) and bytes -> string (output side).
_DECODE = {"hex": lambda s: F.try_to_binary(s, F.lit("hex")), "utf8": lambda s: F.encode(s, "UTF-8"),
           "ascii": lambda s: F.encode(s, "US-ASCII"), "base64": lambda s: F.try_to_binary(s, F.lit("base64"))}
_ENCODE = {"hex": lambda b: F.lower(F.hex(b)), "utf8": lambda b: F.make_valid_utf8(b.cast("string")),
           "ascii": lambda b: F.make_valid_utf8(b.cast("string")), "base64": lambda b: F.base64(b)}


def _encode(ctx, args, exprs) -> Column:
    names = [_text(e, "ENCODE's encoding").lower().replace("-", "") for e in exprs[1:]]
    for name in names:
        if name not in _DECODE:
            raise StatementError(f"Supported input and output encodings are: hex, utf8, ascii and base64; got '{name}'.")
    return _ENCODE[names[1]](_DECODE[names[0]](args[0]))


def _masked(part: str) -> Builder:
    """MASK_LEFT/RIGHT mask the first/last n characters; MASK_KEEP_LEFT/RIGHT all but those."""
    def build(ctx, args, exprs):
        text, n = args[0], F.greatest(args[1], F.lit(0))
        chars = [F.lit("X"), F.lit("x"), F.lit("n"), F.lit("-")] if len(args) == 2 else args[2:6]
        length = F.length(text)
        cut = n if part in ("LEFT", "KEEP_LEFT") else F.greatest(length - n, F.lit(0))
        head, tail = F.substr(text, F.lit(1), cut), F.substr(text, cut + 1, length)
        masked_head = part in ("LEFT", "KEEP_RIGHT")
        head = F.mask(head, *chars) if masked_head else head
        tail = tail if masked_head else F.mask(tail, *chars)
        return F.when(text.isNotNull() & args[1].isNotNull(), F.concat(head, tail))
    return build


def _regexp_extract_all(ctx, args, exprs) -> Column:
    pattern = _text(exprs[0], "REGEXP_EXTRACT_ALL's pattern")
    group = args[2] if len(args) > 2 else F.lit(0)
    return F.regexp_extract_all(args[1], F.lit(pattern), group)


# ---------------------------------------------------------------- geography
#: GEO_DISTANCE's units -> the earth's radius in them (ksqlDB's values).
EARTH_RADIUS = {"KM": 6371.0, "KILOMETER": 6371.0, "KILOMETERS": 6371.0, "MI": 3959.0, "MILE": 3959.0,
                "MILES": 3959.0}


def _geo_distance(ctx, args, exprs) -> Column:
    """The great-circle (haversine) distance, in kilometers unless a unit says miles."""
    unit = _text(exprs[4], "GEO_DISTANCE's unit").upper() if len(exprs) > 4 else "KM"
    if unit not in EARTH_RADIUS:
        raise StatementError(f"GEO_DISTANCE unit must be one of: KM, KILOMETERS, MI, MILES; got '{unit}'.")
    lat1, lon1, lat2, lon2 = (F.radians(a.cast("double")) for a in args[:4])
    a = F.pow(F.sin((lat2 - lat1) / 2), 2) + F.pow(F.sin((lon2 - lon1) / 2), 2) * F.cos(lat1) * F.cos(lat2)
    return F.lit(2.0) * F.asin(F.sqrt(a)) * F.lit(EARTH_RADIUS[unit])


TABLE: dict[str, tuple[Builder, int, int | None]] = {
    "DATEADD": (_date_shift(1), 3, 3),
    "DATESUB": (_date_shift(-1), 3, 3),
    "TIMESTAMPADD": (_timestamp_shift(1), 3, 3),
    "TIMESTAMPSUB": (_timestamp_shift(-1), 3, 3),
    "CONVERT_TZ": (_simple(lambda ts, src, dst: F.from_utc_timestamp(F.to_utc_timestamp(ts, src), dst)), 3, 3),
    "FORMAT_DATE": (_simple(date_format), 2, 2),
    "PARSE_DATE": (_simple(lambda s, fmt: F.to_date(_parsed(s, fmt))), 2, 2),
    "FROM_DAYS": (_simple(F.date_from_unix_date), 1, 1),
    "DATETOSTRING": (_simple(lambda days, fmt: date_format(F.date_from_unix_date(days), fmt)), 2, 2),
    "STRINGTODATE": (_simple(lambda s, fmt: F.unix_date(F.to_date(_parsed(s, fmt)))), 2, 2),
    "IS_JSON_STRING": (_simple(lambda s: F.coalesce(F.try_parse_json(s).isNotNull(), F.lit(False))), 1, 1),
    "JSON_ARRAY_LENGTH": (_simple(F.json_array_length), 1, 1),
    "JSON_KEYS": (_simple(F.json_object_keys), 1, 1),
    "JSON_ITEMS": (_simple(lambda s: _json_values(s, "array")), 1, 1),
    "JSON_RECORDS": (_simple(lambda s: _json_values(s, "map")), 1, 1),
    "TO_JSON_STRING": (_simple(_to_json_string), 1, 1),
    "SPLIT_TO_MAP": (_simple(_split_to_map), 3, 3),
    "MAP_UNION": (_simple(_map_union), 2, 2),
    "FIELD": (_field, 1, None),
    "ENCODE": (_encode, 3, 3),
    "REGEXP_EXTRACT_ALL": (_regexp_extract_all, 2, 3),
    "REGEXP_SPLIT_TO_ARRAY": (_simple(lambda s, regex: F.split(s, regex)), 2, 2),
    **{f"MASK_{part}": (_masked(part), 2, 6) for part in ("LEFT", "RIGHT", "KEEP_LEFT", "KEEP_RIGHT")},
    "URL_ENCODE_PARAM": (_simple(F.url_encode), 1, 1),
    "URL_DECODE_PARAM": (_simple(F.try_url_decode), 1, 1),
    "URL_EXTRACT_PORT": (_simple(lambda u: F.nullif(F.regexp_extract(F.parse_url(u, F.lit("AUTHORITY")),
                                                                       r":(\d+)$", 1), F.lit("")).cast("int")), 1, 1),
    "GEO_DISTANCE": (_geo_distance, 4, 5),
    # TIME
    "PARSE_TIME": (_parse_time, 2, 2),
    "FORMAT_TIME": (_simple(_format_time), 2, 2),
    "TIMEADD": (_time_shift(1), 3, 3),
    "TIMESUB": (_time_shift(-1), 3, 3),
    # JSON, collections, numbers, hashes
    "JSON_ARRAY_CONTAINS": (_json_array_contains, 2, 2),
    "JSON_CONCAT": (_simple(_json_concat), 1, None),
    "ENTRIES": (_simple(_entries), 2, 2),
    "GENERATE_SERIES": (_generate_series, 2, 3),
    "ARRAY_SORT": (_array_sort, 1, 2),
    "TRUNC": (_truncate, 1, 2),
    "MD5": (_simple(F.md5), 1, 1),
}

__all__ = ["TABLE", "EARTH_RADIUS", "date_format"]
