"""What a statement that succeeded says: ksqlDB's CLI messages ("Stream created", "Query
terminated."), and in the materialize dialect psql's command tag ("CREATE SOURCE", "DROP SINK").

Worded before the statement runs (a DROP names the topic its source had), shown once it
succeeded. Statements whose result is shown (queries, listings, a persistent query's card) and
those the CLI runs silently (INSERT VALUES, DEFINE) say nothing.
"""

from __future__ import annotations

from ..sql import ast
from ..sql import ast_materialize as mz_ast
from .defaults import DEFAULT_SETTINGS

#: psql's command tag per statement in the materialize dialect (a DROP and CREATE name their kind).
COMMAND_TAGS = {
    ast.CreateKafkaSource: "CREATE SOURCE",
    mz_ast.CreateSourceTable: "CREATE TABLE",
    mz_ast.CreateSecret: "CREATE SECRET",
    mz_ast.CreateConnection: "CREATE CONNECTION",
    mz_ast.DropSink: "DROP SINK",
    ast.SetProperty: "SET",
    ast.UnsetProperty: "RESET",
}


def notice(stmt: ast.Statement, session) -> str | None:
    """The line `stmt` prints once it succeeded, or None."""
    if session.dialect_now.name == "materialize":
        if isinstance(stmt, (ast.CreateSource, ast.Drop)):
            return f"{'CREATE' if isinstance(stmt, ast.CreateSource) else 'DROP'} {stmt.kind}"
        if isinstance(stmt, ast.CreateView):
            return "CREATE MATERIALIZED VIEW" if stmt.materialized else "CREATE VIEW"
        return COMMAND_TAGS.get(type(stmt))
    handler = _KSQL.get(type(stmt))
    return handler(stmt, session) if handler else None


def _created(stmt: ast.CreateSource, session) -> str:
    kind = stmt.kind.lower()
    if stmt.if_not_exists and session.catalog.resolve(stmt.name, session.dialect_now.name):
        return f"Cannot add {kind} `{stmt.name}`: A {kind} with the same name already exists."
    return f"{kind.capitalize()} created"


def _dropped(stmt: ast.Drop, session) -> str:
    name = session.catalog.resolve(stmt.name, session.dialect_now.name)
    if name is None:
        return f"Source `{stmt.name}` does not exist."  # DROP ... IF EXISTS
    topic = getattr(session.catalog.get(name), "topic", None)  # a view has none
    return f"Source `{name}` (topic: {topic}) was dropped." if topic else f"Source `{name}` was dropped."


def _local(session, name: str) -> str | None:
    """The value a SET gave `name`, as ksqlDB's CLI keeps its local properties (a default is none)."""
    value = session.settings.get(name)
    return None if value == DEFAULT_SETTINGS.get(name) else value


def _set(stmt: ast.SetProperty, session) -> str:
    old = _local(session, stmt.name)
    if old is None:
        return (f"Successfully changed local property '{stmt.name}' to '{stmt.value}'. "
                "Use the UNSET command to revert your change.")
    return f"Successfully changed local property '{stmt.name}' from '{old}' to '{stmt.value}'."


def _unset(stmt: ast.UnsetProperty, session) -> str | None:
    old = _local(session, stmt.name)
    return None if old is None else f"Successfully unset local property '{stmt.name}' (value was '{old}')."


_KSQL = {
    ast.CreateSource: _created,
    ast.Drop: _dropped,
    ast.SetProperty: _set,
    ast.UnsetProperty: _unset,
    ast.TerminateQuery: lambda stmt, session: "Query terminated.",
}
