"""Materialize's custom types, the pure rules: CREATE TYPE as a catalog entry, a type name
resolved where a column or a cast names it, SHOW TYPES, and DROP TYPE refused while a table or
another type uses it (Materialize's messages).

A custom type names a record (`AS (f type, ...)`, our STRUCT), a list (`AS LIST (ELEMENT TYPE
= t)`, our ARRAY) or a map (`AS MAP (KEY TYPE = text, VALUE TYPE = t)`). Names are resolved
when a statement is run: a table's columns hold the types themselves, and the table remembers
which names it used (`USES`), so that DROP TYPE can refuse.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import StatementError
from ..sql import ast
from ..sql import ast_materialize as mz_ast
from .materialize_sinks import qualified

#: SourceDef.properties: the custom type names a writable table's columns use
USES = "TYPES USED"

#: Column types a writable table takes -> the name Materialize's messages give them.
TYPE_WORDS = {
    "BOOLEAN": "boolean", "INT": "integer", "BIGINT": "bigint", "DOUBLE": "double precision",
    "DECIMAL": "numeric", "STRING": "text", "BYTES": "bytea", "DATE": "date",
    "TIMESTAMP": "timestamp without time zone",
}


def type_word(type_: ast.Type) -> str:
    """The type's name in Materialize's messages: `integer`, `integer list`, `map[text=>integer]`."""
    if type_.name == "ARRAY":
        return f"{type_word(type_.element)} list"
    if type_.name == "MAP":
        return f"map[{type_word(type_.key)}=>{type_word(type_.value)}]"
    if type_.name == "STRUCT":
        return "record"
    return TYPE_WORDS.get(type_.name, type_.name.lower())


@dataclass(frozen=True)
class TypeDef:
    name: str
    type: ast.Type  # resolved: no NamedType inside
    uses: tuple[str, ...] = ()  # the custom types its definition names
    statement: str = ""


def names_in(type_: ast.Type) -> tuple[str, ...]:
    """The custom type names `type_` mentions, each once, in order."""
    if isinstance(type_, mz_ast.NamedType):
        return (type_.type_name,)
    inner = [type_.element, type_.key, type_.value, *(t for _, t in type_.fields)]
    return tuple(dict.fromkeys(n for t in inner if t is not None for n in names_in(t)))


def resolve(type_: ast.Type, types: dict[str, TypeDef]) -> ast.Type:
    """`type_` with each custom type name replaced by the type it names."""
    if isinstance(type_, mz_ast.NamedType):
        found = types.get(type_.type_name)
        if found is None:
            raise StatementError(f'type "{type_.type_name}" does not exist')
        return found.type
    if not names_in(type_):
        return type_
    return replace(type_, element=type_.element and resolve(type_.element, types),
                   key=type_.key and resolve(type_.key, types), value=type_.value and resolve(type_.value, types),
                   fields=tuple((n, resolve(t, types)) for n, t in type_.fields))


def with_custom_types(node, types: dict[str, TypeDef]):
    """`node` (a query) with every cast to a custom type, or to a list or map of one, cast to the
    type it names (`ROW(1, 2)::point`, `'{1,2}'::int_list`); a name no type has is left for the
    type check to refuse where it stands."""
    if isinstance(node, tuple):
        return tuple(with_custom_types(item, types) for item in node)
    if not isinstance(node, ast.Node) or isinstance(node, ast.Type):
        return node
    changed = {f.name: with_custom_types(getattr(node, f.name), types) for f in fields(node)
               if f.name not in ("line", "column")}
    if isinstance(node, ast.Cast) and all(name in types for name in names_in(node.type)):
        changed["type"] = resolve(node.type, types)
    return replace(node, **changed)


def define(stmt: mz_ast.CreateType, types: dict[str, TypeDef], taken, text: str = "") -> TypeDef:
    """The catalog entry of CREATE TYPE; `taken(name)` says whether another catalog item has the name."""
    if stmt.name in types or taken(stmt.name):
        raise StatementError(f"catalog item '{stmt.name}' already exists")
    resolved = resolve(stmt.type, types)
    if resolved.name == "MAP" and resolved.key.name != "STRING":
        raise StatementError(f"map key type must be text, got {type_word(resolved.key)}")
    return TypeDef(stmt.name, resolved, names_in(stmt.type), text)


def show_rows(types: dict[str, TypeDef], comments) -> list[dict]:
    """SHOW TYPES: each custom type by name, with its comment (COMMENT ON TYPE; "" for none)."""
    return [{"name": name, "comment": comments.of(name) or ""} for name in sorted(types)]


def check_drop(name: str, types: dict[str, TypeDef], catalog) -> None:
    """DROP TYPE's refusal while another type or a table uses the type."""
    for other in types.values():
        if name in other.uses:
            raise StatementError(f"cannot drop type {qualified(name)}: still depended upon by type "
                                 f"{qualified(other.name)}")
    for source in catalog:
        if name in getattr(source, "properties", {}).get(USES, ()):
            raise StatementError(f"cannot drop type {qualified(name)}: still depended upon by table "
                                 f"{qualified(source.name)}")
