"""ksqlDB's functions over text: case, trimming, padding, searching, regular expressions,
masking, URLs, ENCODE and hashes."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...errors import StatementError
from ...sql import ast
from .builders_spark import Builder, Context, Function, literal_option, literal_text, simple, text_option
from .collections_spark import plain_delimiter


def _substring(s: Column, pos: Column, length: Column | None = None) -> Column:
    return F.substring(s, pos, length) if length is not None else F.substring(s, pos, F.lit(2**31 - 1))


def _regexp_extract(ctx: Context, args: list[Column], exprs: Sequence[ast.Expr]) -> Column:
    pattern = literal_option(exprs[0], "REGEXP_EXTRACT's pattern")
    group = literal_option(exprs[2], "REGEXP_EXTRACT's group") if len(exprs) > 2 else 0
    return F.regexp_extract(args[1], str(pattern), int(group))


def _regexp_extract_all(ctx, args, exprs) -> Column:
    pattern = text_option(exprs[0], "REGEXP_EXTRACT_ALL's pattern")
    group = args[2] if len(args) > 2 else F.lit(0)
    return F.regexp_extract_all(args[1], F.lit(pattern), group)


def _split(s: Column, delimiter: Column) -> Column:
    """ksqlDB splits on a plain delimiter, Spark on a regex: quote it."""
    return F.split(s, plain_delimiter(delimiter))


#: ENCODE's encodings: string -> bytes (input side) and bytes -> string (output side).
_DECODE = {"hex": lambda s: F.try_to_binary(s, F.lit("hex")), "utf8": lambda s: F.encode(s, "UTF-8"),
           "ascii": lambda s: F.encode(s, "US-ASCII"), "base64": lambda s: F.try_to_binary(s, F.lit("base64"))}
_ENCODE = {"hex": lambda b: F.lower(F.hex(b)), "utf8": lambda b: F.make_valid_utf8(b.cast("string")),
           "ascii": lambda b: F.make_valid_utf8(b.cast("string")), "base64": lambda b: F.base64(b)}


def _encode(ctx, args, exprs) -> Column:
    names = [text_option(e, "ENCODE's encoding").lower().replace("-", "") for e in exprs[1:]]
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


FUNCTIONS: dict[str, Function] = {
    "UCASE": Function(simple(F.upper), 1, 1),
    "LCASE": Function(simple(F.lower), 1, 1),
    "INITCAP": Function(simple(F.initcap), 1, 1),
    "LEN": Function(simple(F.length), 1, 1),
    "TRIM": Function(simple(F.trim), 1, 1),
    "LTRIM": Function(simple(F.ltrim), 1, 1),
    "RTRIM": Function(simple(F.rtrim), 1, 1),
    "CONCAT": Function(simple(F.concat), 1, None),
    "CONCAT_WS": Function(lambda ctx, a, e: F.concat_ws(literal_text(e[0]) or "", *a[1:]), 2, None),
    "SUBSTRING": Function(simple(_substring), 2, 3),
    "REPLACE": Function(simple(F.replace), 3, 3),
    "INSTR": Function(simple(F.instr), 2, 2),
    "SPLIT": Function(simple(_split), 2, 2),
    "LPAD": Function(simple(F.lpad), 3, 3),
    "RPAD": Function(simple(F.rpad), 3, 3),
    "ELT": Function(simple(F.elt), 2, None),
    "CHR": Function(simple(F.chr), 1, 1),
    "UUID": Function(lambda ctx, a, e: F.uuid(), 0, 0),
    "MD5": Function(simple(F.md5), 1, 1),
    "REGEXP_EXTRACT": Function(_regexp_extract, 2, 3),
    "REGEXP_REPLACE": Function(simple(F.regexp_replace), 3, 3),
    "REGEXP_EXTRACT_ALL": Function(_regexp_extract_all, 2, 3),
    "REGEXP_SPLIT_TO_ARRAY": Function(simple(lambda s, regex: F.split(s, regex)), 2, 2),
    "ENCODE": Function(_encode, 3, 3),
    "MASK": Function(simple(lambda s: F.mask(s, F.lit("X"), F.lit("x"), F.lit("n"), F.lit("-"))), 1, 1),
    **{f"MASK_{part}": Function(_masked(part), 2, 6) for part in ("LEFT", "RIGHT", "KEEP_LEFT", "KEEP_RIGHT")},
    **{f"URL_EXTRACT_{part}": Function(simple(lambda u, _p=spark_part: F.parse_url(u, F.lit(_p))), 1, 1)
       for part, spark_part in (("HOST", "HOST"), ("PATH", "PATH"), ("PROTOCOL", "PROTOCOL"),
                                ("QUERY", "QUERY"), ("FRAGMENT", "REF"))},
    "URL_EXTRACT_PARAMETER": Function(simple(lambda u, name: F.parse_url(u, F.lit("QUERY"), name)), 2, 2),
    "URL_ENCODE_PARAM": Function(simple(F.url_encode), 1, 1),
    "URL_DECODE_PARAM": Function(simple(F.try_url_decode), 1, 1),
    "URL_EXTRACT_PORT": Function(simple(lambda u: F.nullif(F.regexp_extract(F.parse_url(u, F.lit("AUTHORITY")),
                                                                           r":(\d+)$", 1), F.lit("")).cast("int")), 1, 1),
}
