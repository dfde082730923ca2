"""Which of a record's headers a read must carry: the reader builds only those.

Converting headers is the reader's costliest per-record step and every header entry is one
more value Spark takes in, so a read asks for the least its source's columns need: nothing
without header columns, the last header of each key when only HEADER('k') columns read
them, all of them for a HEADERS column or when a persistent query forwards the input
record's headers to its output.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import HEADER, HEADERS, SourceDef


@dataclass(frozen=True)
class HeaderUse:
    needed: bool
    keys: tuple[str, ...] | None = None  # only these keys' last headers; None: every header


def header_use(source: SourceDef, *, forwarded: bool = False) -> HeaderUse:
    """What a read of `source` needs of each record's headers (`forwarded`: all of them)."""
    if forwarded or source.with_role(HEADERS):
        return HeaderUse(True)
    keys = tuple(dict.fromkeys(c.header_key for c in source.with_role(HEADER)))
    return HeaderUse(bool(keys), keys if keys else None)
