"""Types of Materialize's map and jsonb operators (`->`, `->>`, `#>`, `#>>`): jsonb is JSON
text here, so every jsonb result is text; a map's `->` gives its value type."""

from __future__ import annotations

from ..sql import ast, text_array
from .signatures import widen

#: key types of jsonb's `->` / `->>`: an object's member name, an array's (0-based) index
JSONB_KEYS = frozenset({"STRING", "INT", "BIGINT"})


def map_lookup_type(checker, e) -> ast.Type | None:
    """`map -> key`: the map's value type; jsonb `-> key`, `-> index`, `->> key`, `->> index`: text."""
    base, key = checker.type_of(e.base), checker.type_of(e.key)
    if base is None:
        return None
    if base.name == "STRING" and (key is None or key.name in JSONB_KEYS):
        return base
    if base.name != "MAP" or e.as_text or widen(base.key, key) is False:
        raise _no_operator(checker, e, base, key)
    return base.value


def map_literal_type(checker, e) -> ast.Type:
    """`MAP[k => v, ...]`: text keys, values of one type (numbers widen; all NULL: text)."""
    if not e.entries:
        raise checker.error(e, "cannot determine type of empty map")
    value = None
    for k, v in e.entries:
        key = checker.type_of(k)
        if key is not None and key.name != "STRING":
            raise checker.error(k, f"MAP key {checker.describe(k, key)} must have type text")
        wider = widen(value, checker.type_of(v))
        if wider is False:
            raise checker.error(v, f"MAP values must have one type: {checker.describe(v, checker.type_of(v))} "
                                   f"differs from {checker.messages.type_name(value)}")
        value = wider
    return ast.Type("MAP", key=ast.Type("STRING"), value=value or ast.Type("STRING"))


def json_path_type(checker, e) -> ast.Type | None:
    """jsonb's `#>` / `#>>`: text, the path a text array literal."""
    base, path = checker.type_of(e.base), checker.type_of(e.path)
    if base is None:
        return None
    if base.name != "STRING" or not (isinstance(e.path, ast.Literal) and e.path.kind == "STRING"):
        raise _no_operator(checker, e, base, path)
    try:
        text_array.parse(e.path.value)
    except text_array.MalformedArray as exc:
        raise checker.error(e.path, str(exc)) from None
    return base


def _no_operator(checker, e, left: ast.Type | None, right: ast.Type | None):
    shown = [checker.messages.type_name(t) if t is not None else "unknown" for t in (left, right)]
    return checker.error(e, f"operator does not exist: {shown[0]} {e.op} {shown[1]}")
