"""The aggregate functions and the calls each takes (pure, no Spark): the analysis checks a
GROUP BY's calls here, `functions_spark.py` computes them (one builder per name)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import StatementError


@dataclass(frozen=True)
class Signature:
    args: int = 1
    variadic: bool = False  # takes `args` or more (TOPK's columns carried beside its sort column)
    star: bool = False  # COUNT(*)
    most: int | None = None  # takes `args` to `most` (LATEST_BY_OFFSET's N and ignoreNulls)


SIGNATURES: dict[str, Signature] = {
    "COUNT": Signature(star=True),
    "SUM": Signature(),
    "AVG": Signature(),
    "MIN": Signature(),
    "MAX": Signature(),
    "COUNT_DISTINCT": Signature(),
    "COLLECT_LIST": Signature(),
    "ARRAY_AGG": Signature(),
    "LIST_AGG": Signature(),
    "MAP_AGG": Signature(args=2),
    "STRING_AGG": Signature(args=2),
    "COLLECT_SET": Signature(),
    "LATEST_BY_OFFSET": Signature(most=3),
    "EARLIEST_BY_OFFSET": Signature(most=3),
    "TOPK": Signature(args=2, variadic=True),
    "TOPKDISTINCT": Signature(args=2),
}


def lookup(name: str, nargs: int, star: bool) -> Signature:
    """`name`'s signature, when a call with `nargs` arguments (or `*`) fits it; else ksqlDB's message."""
    signature = SIGNATURES[name]
    if star and not signature.star:
        raise StatementError(f"Function '{name}' does not accept '*'.")
    counts_rows = signature.star and nargs == 0  # ksqlDB's COUNT() counts rows, as COUNT(*) does
    most = None if signature.variadic else signature.most or signature.args
    if not star and not counts_rows and not (signature.args <= nargs and (most is None or nargs <= most)):
        raise StatementError(f"Function '{name}' does not accept {nargs} argument(s).")
    return signature


def is_aggregate(name: str) -> bool:
    return name in SIGNATURES
