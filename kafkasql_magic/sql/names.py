"""How a name written in a statement finds a stored name (a source, a column, a struct field).

Each dialect's parser folds unquoted identifiers (ksql to upper case, Materialize to lower
case) and keeps quoted ones as written. A name matches a stored name exactly; it matches one
ignoring case only when it could have been written unquoted (it is its own folded form) and
no other stored name matches that way, and only a name declared in another dialect: so a
source declared in one dialect can be named from the other, while ksql's quoted `"foo"` and
unquoted `foo` (`FOO`) stay different names, as in ksqlDB.
"""

from __future__ import annotations

from typing import Callable, Collection, Iterable

#: dialect name -> how its parser folds an unquoted identifier.
UNQUOTED: dict[str, Callable[[str], str]] = {"ksql": str.upper, "materialize": str.lower}


def match(wanted: str, names: Iterable[str], dialect: str | None = None,
          own: Collection[str] = ()) -> str | None:
    """The stored name `wanted` names among `names`, or None. `own` are names declared in
    `dialect` itself: they match exactly only (ksql's `FOO` is not its quoted `"foo"`). Without
    a dialect, any name may match ignoring case (statements that do not know theirs)."""
    names = list(names)
    if wanted in names:
        return wanted
    fold = UNQUOTED.get(dialect) if dialect is not None else None
    if fold is not None and fold(wanted) != wanted:
        return None  # quoted and not the folded form: exact only
    found = [n for n in names if n.lower() == wanted.lower() and n not in own]
    return found[0] if len(found) == 1 else None
