"""Materialize's rules: the ksql dialect's tables, extended (sqlglot's `dialects/materialize.py`)."""

from __future__ import annotations

from ..catalog import SourceDef
from ..errors import StatementError
from ..sql import ast
from ..sql.materialize_parser import MATERIALIZE as MATERIALIZE_PARSER
from . import materialize_sources, naming, pg_types
from .dialect import KEY_WITHOUT_VALUE, Dialect, SourceContext


def _kafka_source(stmt: ast.CreateKafkaSource, context: SourceContext) -> SourceDef:
    lookups = materialize_sources.Lookups(context.latest_schema, context.latest_registered)
    return materialize_sources.source_from_create(stmt, registry_url=context.registry_url, text=context.text,
                                                  lookups=lookups, connection=context.connection,
                                                  cell=context.cell)


class Materialize(Dialect):
    name = "materialize"
    parser = MATERIALIZE_PARSER
    naming = naming.MATERIALIZE
    ksql_clause_rules = False
    prefixes_join_star = False
    groups_by_select_items = True
    refuses_duplicate_names = False
    null_comparisons_are_false = False  # PostgreSQL's three-valued logic
    synthetic_join_key = False
    seeks_pseudocolumns = False
    skips_empty_records = True
    skips_stream_tombstones = False
    keeps_emptied_groups = False
    requires_included_headers = True
    fails_on_bad_records = True
    joins_with_diffs = True
    upserts_null_keys = True
    has_source_tables = True
    absent_functions = frozenset()
    stream_envelope_rules = ((KEY_WITHOUT_VALUE, "Envelope error: Flat: Value not present for message"),)
    source_statements = {**Dialect.source_statements, ast.CreateKafkaSource: _kafka_source}

    def show_columns(self, columns, relation=None) -> list[dict]:
        return pg_types.show_columns_rows(columns, relation if isinstance(relation, SourceDef) else None)

    def untyped_functions(self) -> frozenset[str]:
        from ..engine.functions import postgres_spark as pg_functions

        return frozenset(pg_functions.FUNCTIONS)

    def function(self, name, nargs, arg_types):
        """PostgreSQL's functions over ksql's; a call none takes fails in Materialize's words."""
        from ..engine.functions.catalogue_spark import FUNCTIONS
        from ..engine.functions import postgres_spark as pg_functions

        fn = pg_functions.FUNCTIONS.get(name.upper()) or FUNCTIONS.get(name.upper())
        takes = pg_functions.TAKES.get(name.upper())
        if (fn is None or nargs < fn.min_args or (fn.max_args is not None and nargs > fn.max_args)
                or (takes is not None and not takes(arg_types()))):
            shown = [pg_types.materialize_type_name(t) if t is not None else "unknown" for t in arg_types()]
            raise StatementError(pg_functions.missing_function_message(name, shown))
        return fn

    def text_cast(self, value, source_type):
        from ..engine.functions import postgres_spark as pg_functions

        return pg_functions.pg_text(value, source_type)


MATERIALIZE = Materialize()
