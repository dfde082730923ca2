"""INSERT VALUES (one record, produced now) and the persistent queries still to come."""

from __future__ import annotations

from ..engine.analysis import check_persistent
from ..errors import StatementError
from ..kafka.producer import produce
from ..kafka.reach import ensure_reachable
from ..sql import ast
from .records import check_insert_select, record_from_insert


def insert_values(session, stmt: ast.InsertValues, text, timeout):
    target = session.catalog.get(stmt.target)
    ensure_reachable(session.bootstrap_servers, session.timeout_of(timeout))
    produce(session.bootstrap_servers, target.topic, [record_from_insert(stmt, target)], timeout=session.timeout_of(timeout))
    return None


def insert_select(session, stmt: ast.InsertSelect, text, timeout):
    check_insert_select(session.catalog.get(stmt.target))
    check_persistent(stmt.query)
    raise StatementError("Persistent queries (INSERT INTO ... SELECT) are not supported yet by kafkasql_magic.")


def create_as_select(session, stmt: ast.CreateAsSelect, text, timeout):
    check_persistent(stmt.query)
    raise StatementError("Persistent queries (CREATE ... AS SELECT) are not supported yet by kafkasql_magic.")
