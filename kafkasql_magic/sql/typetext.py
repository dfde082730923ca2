"""ksql types as ksqlDB spells them in DESCRIBE output and error messages (no Spark needed)."""

from __future__ import annotations

from . import ast

#: How ksqlDB names a primitive type where its name differs from ours.
DISPLAY_NAMES: dict[str, str] = {"INT": "INTEGER"}


def display(t: ast.Type) -> str:
    """INTEGER, DECIMAL(4, 2), ARRAY<STRUCT<`KEY` STRING, `VALUE` BYTES>>."""
    if t.name == "DECIMAL":
        return f"DECIMAL({t.precision}, {t.scale})" if t.precision is not None else "DECIMAL"
    if t.name == "ARRAY":
        return f"ARRAY<{display(t.element)}>"
    if t.name == "MAP":
        return f"MAP<{display(t.key)}, {display(t.value)}>"
    if t.name == "STRUCT":
        inner = ", ".join(f"`{n}` {display(ft)}" for n, ft in t.fields)
        return f"STRUCT<{inner}>"
    return DISPLAY_NAMES.get(t.name, t.name)
