"""Materialize's COMMENT ON (dialects/comments.py has the rules): the comment goes to the
catalog, and to the command topic, so a restart under the same service id has it again."""

from __future__ import annotations

from ..catalog import ViewDef
from ..dialects.comments import check_target
from ..dialects.writable_tables import is_writable
from ..engine.analysis import analyse
from ..sql import ast
from ..sql import ast_materialize as mz_ast
from .listings import FROM_SOURCE


def comment_on(session, stmt: mz_ast.CommentOn, text, timeout):
    found, parts = _object(session, stmt.name)
    check_target(stmt.kind, stmt.name, found, parts, stmt.column_name)
    session.catalog.comments.set(stmt.name, stmt.column_name, stmt.text)
    return None


def _object(session, name: str) -> tuple[str | None, list[str] | None]:
    """What `name` is, as Materialize names its kind, and its columns (a record type's fields),
    None for a kind that has none."""
    catalog = session.catalog
    if name in catalog:
        relation = catalog.get(name)
        if isinstance(relation, ViewDef):
            select = ast.Select(items=(ast.Star(),), source=ast.SourceRef(name), emit_changes=True)
            return "view", list(analyse(select, catalog, "materialize").names)
        table = is_writable(relation) or FROM_SOURCE in getattr(relation, "properties", {})
        return ("table" if table else "source"), [c.name for c in relation.star_columns]
    if name in session.sinks:
        return "sink", None
    if name in catalog.types:
        fields = catalog.types[name].type.fields
        return "type", [f for f, _ in fields] if fields else None
    if name in catalog.connections.connections:
        return "connection", None
    if any(row["name"] == name for row in catalog.connections.show_secrets()):
        return "secret", None
    return None, None

