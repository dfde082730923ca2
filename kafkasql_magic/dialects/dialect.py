"""A dialect's rules past parsing, as documented flags and tables (sqlglot's
`dialects/dialect.py` idea): the ksql dialect is the base class, Materialize extends it
(`dialects/materialize.py`). Nothing outside the dialect objects compares dialect names.

A query follows the rules of the dialect it is written in; rules about a source's records
(envelopes, seeking) follow the dialect the source was created in (`SourceDef.dialect`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..catalog import SourceDef
from ..sql import KSQL as KSQL_PARSER, ast
from ..sql.parser import Dialect as Parser
from . import ksql_sources, naming

#: A record condition an envelope rule tests (build maps each to a Spark predicate).
NULL_KEY, KEY_WITHOUT_VALUE = "NULL_KEY", "KEY_WITHOUT_VALUE"
#: Materialize's error for a NULL key under ENVELOPE UPSERT (its UpsertNullKeyError, as a query
#: shows it: an envelope error of the upsert kind), saying how to retract it.
UPSERT_NULL_KEY = ("Envelope error: Upsert: Null key: record with NULL key in UPSERT source; to retract this error, "
                   "produce a record upstream with a NULL key and NULL value")


@dataclass(frozen=True)
class SourceContext:
    """What turning a CREATE statement into a catalog entry may use besides the statement:
    session settings, the registry URL and the registry lookups (injected, so the dialects
    never call the registry themselves)."""

    settings: dict
    registry_url: str | None
    text: str
    infer: Callable  # (topic, key_format, value_format, key_schema_id, value_schema_id) -> Inferred
    latest_schema: Callable  # (registry_url, topic, "key" | "value") -> parsed Avro schema
    latest_registered: Callable | None = None  # (registry_url, topic, role) -> its text and references
    connection: Callable | None = None  # (name, kind) -> connections.Endpoint (Catalog.connection)
    cell: str = ""  # the text the statement came from (positions count in it), for carets


def _ksql_source(stmt: ast.CreateSource, context: SourceContext) -> SourceDef:
    settings = {**context.settings, ksql_sources.SCHEMA_REGISTRY_URL: context.registry_url}
    return ksql_sources.source_from_create(stmt, settings, context.text, infer=context.infer)


class Dialect:
    """ksqlDB's rules."""

    name = "ksql"
    parser: Parser = KSQL_PARSER
    naming = naming.KSQL
    #: ksqlDB's clause rules: pull-query limits (KLIP-50), aggregates need GROUP BY,
    #: stream-stream joins need WITHIN. Apply when both the query and its source follow them.
    ksql_clause_rules = True
    #: `SELECT *` over a join names columns after their source (`A_ID`).
    prefixes_join_star = True
    #: GROUP BY may name a SELECT list item by its position (`GROUP BY 1`) or its alias where no
    #: FROM item has a column so named (PostgreSQL's rule; ksqlDB groups by expressions only).
    groups_by_select_items = False
    #: Two result columns with one name are refused.
    refuses_duplicate_names = True
    #: A comparison (=, <>, <, <=, >, >=, and so BETWEEN and IN) with a NULL operand is false, not
    #: NULL: ksqlDB's generated code tests for NULL first (SqlToJavaVisitor.nullCheckPrefix,
    #: InListEvaluator), so `NOT (a > b)` holds when b is NULL and `a > b` selects `false`.
    null_comparisons_are_false = True
    #: A join is keyed by its join expression: a synthetic `ROWKEY` when no source column is it
    #: (FULL OUTER, an ON of two expressions), and an outer join's key column never NULL.
    synthetic_join_key = True
    #: A push query's WHERE on ROWPARTITION/ROWOFFSET/ROWTIME narrows what is read (sources of this dialect).
    seeks_pseudocolumns = True
    #: Records with neither key nor value are skipped (sources of this dialect without an envelope).
    skips_empty_records = False
    #: A NULL value (tombstone) on a stream with value columns is skipped by push and pull queries
    #: (ksqlDB's transient-query queue drops them), aggregations, joins and WHERE clauses; a
    #: persistent query's projection passes it on (engine/build/query_spark.py); a stream of only key and
    #: header columns has nothing to decode from the value and keeps every record. Tables treat it
    #: as a delete.
    skips_stream_tombstones = True
    #: A table aggregation's group that its last row leaves stays, with the aggregates of no rows
    #: (a count of 0, a sum of 0), as Kafka Streams' subtractor leaves it in ksqlDB; when False
    #: (Materialize) the group is gone: a tombstone, a retraction in SUBSCRIBE.
    keeps_emptied_groups = True
    #: A record without a header its source includes by key is an error (sources of this dialect).
    requires_included_headers = False
    #: Under ENVELOPE UPSERT, NULL is one more key: a record with a NULL key and a NULL value
    #: retracts the error of the earlier NULL-key records (sources of this dialect).
    upserts_null_keys = False
    #: A query that meets a bad record fails (naming it) instead of logging it and going on.
    fails_on_bad_records = False
    #: A push query over a join of two relations joins them whole (no windows) as multisets and
    #: emits the result's diffs (Materialize's SUBSCRIBE: engine/diff_join/rules.py).
    joins_with_diffs = False
    #: Envelope rules of a keyless-envelope stream: (condition, message) per rule.
    stream_envelope_rules: tuple[tuple[str, str], ...] = ()
    #: Tables are read from sources: CREATE TABLE ... FROM SOURCE takes a source created in this
    #: dialect (its topic and first offsets), and SHOW TABLES lists those tables.
    has_source_tables = False
    #: Functions of the shared tables this dialect does not have: ksqlDB aggregates into a list
    #: with COLLECT_LIST and knows no `list_agg`, so a ksql query naming one gets "Can't find".
    absent_functions = frozenset({"ARRAY_AGG", "LIST_AGG", "MAP_AGG", "STRING_AGG"})
    #: Statement type -> how it becomes a catalog entry.
    source_statements: dict[type, Callable[[ast.Statement, SourceContext], SourceDef]] = {
        ast.CreateSource: _ksql_source,
    }

    def __repr__(self) -> str:
        return f"<dialect {self.name}>"

    def define_source(self, stmt: ast.Statement, context: SourceContext) -> SourceDef:
        """The catalog entry a CREATE statement of this dialect declares (validated)."""
        return self.source_statements[type(stmt)](stmt, context)

    def envelope_rules(self, source: SourceDef) -> tuple[tuple[str, str], ...]:
        """(condition, message) per rule that turns a record of `source` into an error."""
        if source.envelope == "UPSERT":
            return ((NULL_KEY, UPSERT_NULL_KEY),)
        if source.kind == "TABLE":
            return ((NULL_KEY, "Record with a NULL key dropped from table"),)
        return self.stream_envelope_rules

    def show_columns(self, columns, relation=None) -> list[dict] | None:
        """SHOW COLUMNS rows for catalog columns of `relation` (a source or view), where the
        dialect's listing differs from ksqlDB's DESCRIBE (None: DESCRIBE's)."""
        return None

    def untyped_functions(self) -> frozenset[str]:
        """Functions of this dialect the type checker's signature table does not cover."""
        return frozenset()

    def function(self, name: str, nargs: int, arg_types: Callable[[], list[ast.Type]]):
        """The scalar function `name` of this dialect for `nargs` arguments (`arg_types()`
        gives their types, asked for only to word an error)."""
        from ..engine.functions import catalogue_spark as functions

        return functions.lookup(name, nargs)

    def text_cast(self, value, source_type: ast.Type):
        """`value::text` / CAST(value AS STRING) in this dialect's words (None: Spark's cast)."""
        return None

    def skips_empty(self, source: SourceDef) -> bool:
        return self.skips_empty_records and source.envelope == "NONE"

    def skips_null_value(self, source: SourceDef) -> bool:
        return self.skips_stream_tombstones and source.kind == "STREAM" and bool(source.value_columns)


KSQL = Dialect()
