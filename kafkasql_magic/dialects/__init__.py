"""Dialects: each one's rules past parsing (naming, clause rules, envelopes, DDL)."""

from __future__ import annotations

from ..sql import get_dialect as parser_of
from .dialect import KSQL, Dialect, SourceContext
from .materialize import MATERIALIZE

DIALECTS: dict[str, Dialect] = {d.name: d for d in (KSQL, MATERIALIZE)}


def get(name: str | Dialect) -> Dialect:
    """The dialect named `name` (case-insensitive); a Dialect is returned as is."""
    if isinstance(name, Dialect):
        return name
    return DIALECTS[parser_of(name).name]  # the parser refuses unknown names


__all__ = ["DIALECTS", "Dialect", "KSQL", "MATERIALIZE", "SourceContext", "get"]
