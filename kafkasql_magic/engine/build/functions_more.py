"""ksqlDB's date/time, JSON, map, URL, masking and geo functions as Spark expressions (the
rest of its scalar catalogue after `functions.FUNCTIONS`), as a table: name -> (builder,
fewest arguments, most arguments or None). Signatures: `typecheck/signatures_more.py`.

Each follows ksqlDB's documented results, NULL in gives NULL out unless ksqlDB says
otherwise (FIELD and IS_JSON_STRING answer for NULL too).
"""

from __future__ import annotations

from typing import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

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
    """FIELD: the 1-based position of the first argument among the others, 0 if absent or NULL."""
    return F.coalesce(F.array_position(F.array(*args[1:]), args[0]).cast("int"), F.lit(0))


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
}

__all__ = ["TABLE", "EARTH_RADIUS", "date_format"]
