"""PostgreSQL / Materialize functions over lists, maps and bytea, as tables of Spark builders.

Same builder signature as catalogue_spark.FUNCTIONS (context, argument columns, argument ASTs), so
the Materialize dialect registers these over ksql's table (its aggregates, list_agg, map_agg,
array_agg and string_agg, are in engine.aggregate.functions_spark with ksql's). A value a function cannot take
(bad hex, bytes that are not UTF-8) is reported with `ctx.fail` in PostgreSQL's words and
gives NULL, as the ksql functions do. Also here: PostgreSQL's text form of a value
(`bytea::text` is `\\x6d65...`, a list `{a,b}`, a record `(a,b)`), and the message for a
function that does not exist.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd
from pyspark.sql import Column
from pyspark.sql import functions as F

from ...errors import StatementError
from .builders_spark import Context, Function, literal_text, simple
from .postgres_time_spark import FUNCTIONS as TIME_FUNCTIONS
from ...sql import ast

#: PostgreSQL wraps base64 text at 76 characters.
BASE64_LINE = 76

_UNKNOWN_FORMAT = 'unrecognized encoding: "{}"'
_BAD_UTF8 = 'invalid byte sequence for encoding "UTF8": '


def missing_function_message(name: str, arg_types: Sequence[str]) -> str:
    """Materialize's (PostgreSQL's) message for a call no function matches."""
    return f"function {name.lower()}({', '.join(arg_types)}) does not exist"


# ---------------------------------------------------------------- bytea <-> text
def _pg_base64(b: Column) -> Column:
    """Spark may chunk base64 with CRLF (spark.sql.chunkBase64String.enabled): unchunk, then wrap."""
    flat = F.regexp_replace(F.base64(b), r"\r\n", "")
    return F.regexp_replace(flat, f"(.{{{BASE64_LINE}}})(?=.)", "$1\n")


#: encode/decode formats: bytea -> text, text -> bytea (NULL when the text is not valid)
FORMATS: dict[str, tuple[Callable[[Column], Column], Callable[[Column], Column]]] = {
    "hex": (lambda b: F.lower(F.hex(b)), lambda s: F.try_to_binary(s, F.lit("hex"))),
    "base64": (_pg_base64, lambda s: F.try_to_binary(F.regexp_replace(s, r"\s", ""), F.lit("base64"))),
}


def _format(exprs: Sequence[ast.Expr], position: int) -> str:
    name = literal_text(exprs[position])
    if name is None:
        raise StatementError("the format of encode/decode must be a string literal ('hex' or 'base64')")
    if name.lower() not in FORMATS:
        raise StatementError(_UNKNOWN_FORMAT.format(name))
    return name.lower()


def _encode(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    return FORMATS[_format(exprs, 1)][0](args[0])


def _decode(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    name = _format(exprs, 1)
    decoded = FORMATS[name][1](args[0])
    ctx.fail(args[0].isNotNull() & decoded.isNull(),
             F.concat(F.lit(f"invalid {name} input: \""), args[0], F.lit('"')))
    return decoded


def _utf8_text(ctx: Context, b: Column) -> Column:
    text = b.cast("string")
    bad = b.isNotNull() & ~F.is_valid_utf8(text)
    ctx.fail(bad, F.concat(F.lit(_BAD_UTF8), _hex_bytes(b)))
    return F.when(~bad, text)


def _hex_bytes(b: Column) -> Column:
    """PostgreSQL lists bad bytes as `0xc3 0x28`."""
    return F.array_join(F.transform(F.split(F.regexp_replace(F.lower(F.hex(b)), "(..)", "$1 "), " "),
                                    lambda h: F.when(h != "", F.concat(F.lit("0x"), h))), " ")


_UTF8_NAMES = frozenset({"utf8", "utf-8", "unicode"})


def _convert_from(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    encoding = literal_text(exprs[1])
    if encoding is None or encoding.lower() not in _UTF8_NAMES:
        raise StatementError(f'invalid source encoding name "{encoding}"')
    return _utf8_text(ctx, args[0])


def _length(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """length(text) counts characters, length(bytea) bytes, length(bytea, 'utf8') characters."""
    if len(args) == 2:
        return F.length(_convert_from(ctx, args, exprs))
    return F.length(args[0])


def _left(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """left(s, n): the first n characters; a negative n, all but the last -n."""
    s, n = args
    return F.when(n.isNotNull(), F.substring(s, 1, F.when(n >= 0, n).otherwise(F.greatest(F.length(s) + n, F.lit(0)))))


def _right(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """right(s, n): the last n characters; a negative n, all but the first -n."""
    s, n = args
    kept = F.when(n >= 0, F.least(n, F.length(s))).otherwise(F.greatest(F.length(s) + n, F.lit(0)))
    return F.when(n.isNotNull(), F.when(kept == 0, F.lit("")).otherwise(F.substring(s, F.length(s) - kept + 1, kept)))


def _btrim(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """btrim(s [, characters]): the characters (a space by default) removed from both ends."""
    return F.btrim(args[0], args[1]) if len(args) == 2 else F.btrim(args[0])


# ---------------------------------------------------------------- lists and maps
def _list_length(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    return F.when(args[0].isNotNull(), F.size(args[0]))


def _map_build(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """A map from a list of (key, value) records, such as the headers list: NULL keys are
    skipped, and of repeated keys the last record wins."""
    entries = F.filter(args[0], lambda e: e["key"].isNotNull())
    keys = F.array_distinct(F.transform(entries, lambda e: e["key"]))
    return F.when(args[0].isNotNull(), F.map_from_arrays(keys, F.transform(
        keys, lambda k: F.element_at(F.filter(entries, lambda e: e["key"] == k), -1)["value"])))


def _position(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """position(substring, string): 1-based, 0 when absent (PostgreSQL's `position(s IN t)`)."""
    return F.instr(args[1], args[0])


def _substring(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    """substring(s, start [, count]) as PostgreSQL: a start before 1 eats into the count;
    a negative count is an error."""
    s, start = args[0], args[1]
    if len(args) == 2:
        return F.substring(s, F.greatest(start, F.lit(1)), F.lit(2**31 - 1))
    count = args[2]
    ctx.fail(count < 0, F.lit("negative substring length not allowed"))
    end = start + count  # exclusive
    first = F.greatest(start, F.lit(1))
    return F.when(count >= 0, F.when(end <= first, F.lit("")).otherwise(F.substring(s, first, end - first)))


def _murmur2(values: pd.Series) -> pd.Series:
    """Kafka's murmur2 of text or bytes, its sign bit cleared: the hash Kafka's default partitioner
    takes modulo the partition count (the project's producers and Java's place keys by it)."""
    from ...kafka.partitioner import murmur2

    return values.map(lambda v: None if v is None else
                      murmur2(v.encode() if isinstance(v, str) else bytes(v)) & 0x7FFFFFFF)


def _kafka_murmur2(ctx, args, exprs) -> Column:
    """Materialize's kafka_murmur2(text | bytea), for a sink's PARTITION BY."""
    return F.pandas_udf(_murmur2, "int")(args[0])


FUNCTIONS: dict[str, Function] = {
    "KAFKA_MURMUR2": Function(_kafka_murmur2, 1, 1),
    "LIST_LENGTH": Function(_list_length, 1, 1),
    # a row per element (a list's or an array's; none for an empty or NULL one), as PostgreSQL's
    # unnest in a SELECT list: its argument's check (engine/unnest runs the calls in lockstep)
    "UNNEST": Function(simple(F.explode), 1, 1),
    # ROW(a, b): a record of fields f1, f2, ... (PostgreSQL's names), cast to a record type by position
    "ROW": Function(lambda ctx, args, exprs: F.struct(*[a.alias(f"f{i}") for i, a in enumerate(args, start=1)]),
                    1, None),
    "MAP_BUILD": Function(_map_build, 1, 1),
    "ENCODE": Function(_encode, 2, 2),
    "DECODE": Function(_decode, 2, 2),
    "CONVERT_FROM": Function(_convert_from, 2, 2),
    "LENGTH": Function(_length, 1, 2),
    "CHAR_LENGTH": Function(simple(F.char_length), 1, 1),
    "UPPER": Function(simple(F.upper), 1, 1),
    "LOWER": Function(simple(F.lower), 1, 1),
    "LEFT": Function(_left, 2, 2),
    "RIGHT": Function(_right, 2, 2),
    "BTRIM": Function(_btrim, 1, 2),
    "REVERSE": Function(simple(F.reverse), 1, 1),
    "REPEAT": Function(simple(lambda s, n: F.when(n.isNotNull(), F.repeat(s, F.greatest(n, F.lit(0))))), 2, 2),
    "STARTS_WITH": Function(simple(F.startswith), 2, 2),
    "OCTET_LENGTH": Function(simple(F.octet_length), 1, 1),
    "POSITION": Function(_position, 2, 2),
    "STRPOS": Function(simple(lambda s, sub: F.instr(s, sub)), 2, 2),
    "SUBSTRING": Function(_substring, 2, 3),
    "SUBSTR": Function(_substring, 2, 3),
    **TIME_FUNCTIONS,
}


def _texts_then_ints(texts: int):
    """Arguments: `texts` text ones, then integers (a NULL's or an unknown type passes)."""
    def takes(types) -> bool:
        wanted = [("STRING",)] * texts + [("INT", "BIGINT")] * (len(types) - texts)
        return all(t is None or t.name in names for t, names in zip(types, wanted))
    return takes


#: Functions taking only some types of argument: which (argument types, None where unknown).
TAKES = {"UNNEST": lambda types: types[0] is None or types[0].name == "ARRAY",
         **{name: _texts_then_ints(texts) for name, texts in (
             ("CHAR_LENGTH", 1), ("UPPER", 1), ("LOWER", 1), ("LEFT", 1), ("RIGHT", 1), ("BTRIM", 2),
             ("REVERSE", 1), ("REPEAT", 1), ("STARTS_WITH", 2))},
         "DATE_TRUNC": lambda types: (types[0] is None or types[0].name == "STRING") and (
             types[1] is None or types[1].name in ("TIMESTAMP", "DATE"))}


def lookup(name: str, arg_types: Sequence[str]) -> Function:
    """The function `name` takes these arguments, or Materialize's message for one that does not exist."""
    fn = FUNCTIONS.get(name.upper())
    n = len(arg_types)
    if fn is None or n < fn.min_args or (fn.max_args is not None and n > fn.max_args):
        raise StatementError(missing_function_message(name, arg_types))
    return fn


# ---------------------------------------------------------------- PostgreSQL's text forms
_NEEDS_QUOTES = r'^$|[{},"\\\s]|^(?i:null)$'
_RECORD_NEEDS_QUOTES = r'^$|[(),"\\\s]'
_MAP_NEEDS_QUOTES = r'^$|[{},"\\\s=>]|^(?i:null)$'
#: types whose text is braces, never quoted inside a list or map (PostgreSQL quotes a record's)
_NESTED = ("ARRAY", "MAP")


def _quoted(text: Column, needs_quotes: str) -> Column:
    escaped = F.regexp_replace(F.regexp_replace(text, r"\\", r"\\\\"), '"', '\\\\"')
    return F.when(text.rlike(needs_quotes), F.concat(F.lit('"'), escaped, F.lit('"'))).otherwise(text)


def _element(value: Column, type_: ast.Type, needs_quotes: str) -> Column:
    text = pg_text(value, type_, nested=True)
    return text if type_.name in _NESTED else _quoted(text, needs_quotes)


def pg_text(value: Column, type_: ast.Type, *, nested: bool = False) -> Column:
    """`value::text` as PostgreSQL writes it: bytea as \\x-hex, booleans true/false (t/f inside
    a list or record, as PostgreSQL's output function writes them), a list as {a,b} (NULL
    elements as NULL; an inner list or map unquoted), a map as Materialize writes it, {a=>1,b=>2}
    (by key), a record as (a,b) (NULL fields empty), quoting elements that need it."""
    name = type_.name
    if name == "BYTES":
        return F.concat(F.lit("\\x"), F.lower(F.hex(value)))
    if name == "BOOLEAN":
        yes, no = ("t", "f") if nested else ("true", "false")
        return F.when(value, F.lit(yes)).when(~value, F.lit(no))
    if name == "ARRAY":
        items = F.transform(value, lambda e: F.coalesce(_element(e, type_.element, _NEEDS_QUOTES), F.lit("NULL")))
        return F.concat(F.lit("{"), F.array_join(items, ","), F.lit("}"))
    if name == "MAP":  # Materialize's {k=>v,...}, by key
        items = F.transform(F.array_sort(F.map_entries(value)), lambda e: F.concat(
            _quoted(e["key"], _MAP_NEEDS_QUOTES), F.lit("=>"),
            F.coalesce(_element(e["value"], type_.value, _MAP_NEEDS_QUOTES), F.lit("NULL"))))
        return F.concat(F.lit("{"), F.array_join(items, ","), F.lit("}"))
    if name == "STRUCT":
        fields = [F.coalesce(_quoted(pg_text(value[f], t, nested=True), _RECORD_NEEDS_QUOTES), F.lit(""))
                  for f, t in type_.fields]
        return F.when(value.isNotNull(), F.concat(F.lit("("), F.concat_ws(",", *fields), F.lit(")")))
    return value.cast("string")
