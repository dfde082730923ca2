"""Materialize's CREATE TYPE, DROP TYPE and SHOW TYPES: the catalog's `types` hold them
(dialects/custom_types.py has the rules). CREATE TYPE and DROP TYPE go to the command topic,
so a restart under the same service id has the types again before the tables that use them."""

from __future__ import annotations

import pandas as pd

from ..dialects.custom_types import check_drop, define, show_rows
from ..errors import StatementError
from ..sql import ast_materialize as mz_ast


def create_type(session, stmt: mz_ast.CreateType, text, timeout):
    catalog = session.catalog
    catalog.types[stmt.name] = define(stmt, catalog.types, lambda name: name in catalog, text)
    return None


def drop_type(session, name: str, if_exists: bool) -> None:
    types = session.catalog.types
    if name not in types:
        if if_exists:
            return None
        raise StatementError(f"unknown catalog item '{name}'")
    check_drop(name, types, session.catalog)
    del types[name]
    session.catalog.comments.drop(name)
    return None


def show_types(session) -> pd.DataFrame:
    return pd.DataFrame(show_rows(session.catalog.types, session.catalog.comments), columns=["name", "comment"])
