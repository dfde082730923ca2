"""When a push query joining a stream with a table keeps the table as keyed state, and ksqlDB's
rule for the ON clause of a stream-table join. Pure: no Spark."""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast
from ...sql.render import render
from ..analysis.plan import STREAM, TABLE, Input
from ..table_join.kinds import is_key, sides


def looks_up_table(stmt: ast.Select, inputs: list[Input], diffs: bool) -> bool:
    """A push query joining a stream with one table on the table's primary key (INNER or LEFT,
    ksqlDB's stream-table join) keeps the table as keyed state (engine/lookup_join), so each
    record meets the table as it is then, and no micro-batch reads the table again."""
    if not (stmt.emit_changes and not diffs and len(inputs) == 2 and inputs[0].kind == STREAM
            and inputs[1].kind == TABLE and inputs[1].view is None and inputs[0].view is None
            and stmt.joins[0].kind in ("INNER", "LEFT") and stmt.joins[0].within is None):
        return False
    found = sides(stmt.joins[0].on, inputs)
    return found is not None and is_key(found[1], inputs[1])


def check_lookup_join(stmt: ast.Select, inputs: list[Input], aggregating: bool) -> None:
    """ksqlDB's rule for a stream-table join: the ON clause equates the table's primary key."""
    if not (aggregating and stmt.emit_changes and len(inputs) == 2 and inputs[0].kind == STREAM
            and inputs[1].kind == TABLE):
        return
    found = sides(stmt.joins[0].on, inputs)
    if found is None or not is_key(found[1], inputs[1]):
        got = f"{render(found[0])} = {render(found[1])}" if found else render(stmt.joins[0].on)
        raise StatementError("Invalid join condition: stream-table joins require to join on the table's "
                             f"primary key. Got {got}.")
