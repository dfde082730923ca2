"""INSERT VALUES (one record, produced now) and persistent queries (sinks/ runs them)."""

from __future__ import annotations

from ..kafka.producer import produce
from ..kafka.reach import ensure_reachable
from ..sql import ast
from .insert_expressions import evaluate
from ..sinks.plan import insert_target
from .records import record_from_insert


def insert_values(session, stmt: ast.InsertValues, text, timeout):
    target = insert_target(session.catalog, stmt, session.dialect_now.name)
    ensure_reachable(session.bootstrap_servers, session.timeout_of(timeout))
    record = record_from_insert(stmt, target, lambda exprs: evaluate(session.spark, session.dialect_now, exprs)
                                if exprs else [])
    produce(session.bootstrap_servers, target.topic, [record], timeout=session.timeout_of(timeout))
    return None


def insert_select(session, stmt: ast.InsertSelect, text, timeout):
    return session.persistent.insert_select(stmt, text)


def create_as_select(session, stmt: ast.CreateAsSelect, text, timeout):
    return session.persistent.create_as_select(stmt, text)


def explain_query(session, stmt: ast.ExplainQuery, text, timeout):
    return session.persistent.explain(stmt.query_id)
