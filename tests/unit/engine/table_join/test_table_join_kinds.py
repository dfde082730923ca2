"""Table-table joins in the analysis step: which kind, the result's key, ksqlDB's refusals."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.table_join.kinds import FOREIGN_KEY, PRIMARY_KEY
from kafkasql_magic.engine.tree import nodes as n
from kafkasql_magic.engine.tree.planner import tree_of
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement

from test_analysis import SETTINGS, catalog, plan_of


def tables():
    cat = catalog()
    for create in ("CREATE TABLE users (id INT PRIMARY KEY, name STRING, team INT) "
                   "WITH (kafka_topic='u', value_format='JSON');",
                   "CREATE TABLE scores (id INT PRIMARY KEY, score INT) WITH (kafka_topic='s', value_format='JSON');",
                   "CREATE TABLE teams (tid INT PRIMARY KEY, title STRING) WITH (kafka_topic='t', value_format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


@pytest.mark.parametrize("kind", ["JOIN", "LEFT JOIN", "RIGHT JOIN"])  # FULL: a synthetic key (test_join_keys.py)
def test_a_primary_key_join_of_two_tables_is_a_table_keyed_by_the_join_column(kind):
    plan = plan_of(f"SELECT u.id, name, score FROM users u {kind} scores s ON u.id = s.id EMIT CHANGES;",
                   cat=tables())
    assert (plan.table_join, plan.kind, plan.key_names, plan.per_batch) == (PRIMARY_KEY, "TABLE", ["U_ID"], False)
    assert plan.output_mode == "append"  # the stateful step emits each change once


@pytest.mark.parametrize("second", ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"])
def test_three_tables_on_their_primary_keys_are_one_table_join(second):
    text = (f"SELECT * FROM users u JOIN scores s ON u.id = s.id {second} teams t ON u.id = t.tid "
            "EMIT CHANGES;")
    plan = plan_of(text, cat=tables())
    assert (plan.table_join, plan.kind, plan.per_batch) == (PRIMARY_KEY, "TABLE", False)
    full = second.startswith("FULL")
    assert plan.names == [*(["ROWKEY"] if full else []), "U_ID", "U_NAME", "U_TEAM", "S_ID", "S_SCORE", "T_TID",
                          "T_TITLE"]
    assert plan.key_names == (["ROWKEY"] if full else ["U_ID"])


def test_a_foreign_key_join_is_keyed_by_the_left_tables_key():
    plan = plan_of("SELECT u.id, name, title FROM users u LEFT JOIN teams t ON u.team = t.tid EMIT CHANGES;",
                   cat=tables())
    assert (plan.table_join, plan.kind, plan.key_names) == (FOREIGN_KEY, "TABLE", ["ID"])
    flipped = plan_of("SELECT u.id, title FROM users u JOIN teams t ON t.tid = u.team EMIT CHANGES;", cat=tables())
    assert flipped.table_join == FOREIGN_KEY


def test_a_foreign_key_join_then_joins_on_the_left_key_is_keyed_by_the_left_key():
    plan = plan_of("SELECT u.id, name, title, score FROM users u LEFT JOIN teams t ON u.team = t.tid "
                   "JOIN scores s ON u.id = s.id EMIT CHANGES;", cat=tables())
    assert (plan.table_join, plan.kind, plan.key_names) == (FOREIGN_KEY, "TABLE", ["U_ID"])  # ID: in two tables
    assert plan.join_key.filled == ("U_ID",)  # a later RIGHT join's row may have no user: the key fills it
    full = plan_of("SELECT * FROM users u JOIN teams t ON u.team = t.tid FULL JOIN scores s ON u.id = s.id "
                   "EMIT CHANGES;", cat=tables())
    assert (full.table_join, full.key_names, full.names[0]) == (FOREIGN_KEY, ["ROWKEY"], "ROWKEY")


def test_other_queries_are_not_table_joins():
    snapshot = plan_of("SELECT u.id FROM users u JOIN scores s ON u.id = s.id", "materialize", cat=tables())
    assert snapshot.table_join is None
    assert plan_of("SELECT o.id FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;").table_join is None


@pytest.mark.parametrize("text, message", [
    ("SELECT u.id FROM users u JOIN scores s ON u.team = s.score EMIT CHANGES;",
     "Invalid join condition: table-table joins require to join on the primary key of the right input table. "
     "Got U.TEAM = S.SCORE."),
    ("SELECT u.id FROM users u FULL OUTER JOIN teams t ON u.team = t.tid EMIT CHANGES;",
     "Invalid join type: full-outer join not supported for foreign-key table-table join. "
     "Got USERS FULL OUTER JOIN TEAMS."),
    ("SELECT u.id FROM users u RIGHT JOIN teams t ON u.team = t.tid EMIT CHANGES;",
     "Invalid join type: right-outer join not supported for foreign-key table-table join."),
    # n-way joins: every join after the first is on the primary key (fk-n-way-join.json)
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN teams t ON team = t.tid EMIT CHANGES;",
     "Invalid join condition: foreign-key table-table joins are not supported as part of n-way joins. "
     "Got U.TEAM = T.TID."),
    ("SELECT users.id FROM users JOIN teams ON team = tid JOIN scores ON team = scores.id EMIT CHANGES;",
     "Invalid join condition: foreign-key table-table joins are not supported as part of n-way joins. "
     "Got USERS.TEAM = SCORES.ID."),
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN teams t ON u.id = t.title EMIT CHANGES;",
     "Invalid join condition: table-table joins require to join on the primary key of the right input table. "
     "Got U.ID = T.TITLE."),
    # after a FULL join the key is synthetic: ksqlDB would repartition the joined table, which it refuses
    ("SELECT u.id FROM users u FULL JOIN scores s ON u.id = s.id JOIN teams t ON u.id = t.tid EMIT CHANGES;",
     "Cannot repartition a TABLE source. If this is a join, make sure that the criteria uses the TABLE's key "
     "column ROWKEY instead of [U_ID]"),
    # after a foreign-key join: on the first table's key
    ("SELECT u.id FROM users u JOIN teams t ON u.team = t.tid JOIN scores s ON t.tid = s.id EMIT CHANGES;",
     "Invalid join condition: a join after a foreign-key table-table join must be on the primary key of the first "
     "table (the key of the foreign-key join's result). Got T.TID = S.ID."),
    # ksqlDB's analyzer on an ON clause (multi-joins.json)
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN scores ON u.id = scores.id EMIT CHANGES;",
     "N-way joins do not support multiple occurrences of the same source. Source: 'SCORES'."),
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN teams t ON u.id = s.id EMIT CHANGES;",
     "A join criteria is expected to reference the source (`T`) in the FROM clause, instead the right source "
     "references `S` and the left source references `U`"),
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN teams t ON u.id = u.team EMIT CHANGES;",
     "Each side of the join must reference exactly one source and not the same source. Left side references `U` "
     "and right references `U`"),
    ("SELECT u.id FROM users u JOIN scores s ON u.id = s.id JOIN teams t ON u.id = 0 EMIT CHANGES;",
     "Invalid comparison expression '0' in join '(U.ID = 0)'. Each side of the join comparision must contain "
     "references from exactly one source."),
    ("SELECT u.id FROM users u JOIN scores s ON u.id > s.id EMIT CHANGES;",
     "Invalid join condition: table-table joins require an equality between a column of each table."),
])
def test_refused_table_joins_in_ksqldb_words(text, message):
    with pytest.raises(StatementError) as error:
        plan_of(text, cat=tables())
    assert message in str(error.value)


@pytest.mark.parametrize("on, kind", [("u.id = s.id", PRIMARY_KEY), ("u.team = t.tid", FOREIGN_KEY)])
def test_a_group_by_over_joined_tables_aggregates_the_joins_table(on, kind):
    """Each joined row's change retracts its old version from its group (keyed by the group)."""
    right = "scores s" if on.startswith("u.id") else "teams t"
    plan = plan_of(f"SELECT u.name, COUNT(*) AS n FROM users u JOIN {right} ON {on} GROUP BY u.name EMIT CHANGES;",
                   cat=tables())
    assert (plan.table_join, plan.retracts, plan.per_batch, plan.kind, plan.key_names) == (
        kind, True, False, "TABLE", ["NAME"])
    tree = tree_of(plan)
    assert type(tree) is n.RetractingAggregate and isinstance(tree.child, n.TableJoin), tree


@pytest.mark.parametrize("text, message", [
    ("SELECT u.name, COUNT(*) AS n FROM users u JOIN scores s ON u.id = s.id WINDOW TUMBLING (SIZE 1 MINUTE) "
     "GROUP BY u.name EMIT CHANGES;", "Windowing not supported for table aggregations."),
    ("SELECT u.name, MAX(s.score) AS m FROM users u JOIN scores s ON u.id = s.id GROUP BY u.name EMIT CHANGES;",
     "The aggregation function MAX cannot be applied to a table source, only to a stream source."),
])
def test_a_group_by_over_joined_tables_is_refused_as_ksqldb_refuses_a_table_aggregation(text, message):
    with pytest.raises(StatementError) as refused:
        plan_of(text, cat=tables())
    assert str(refused.value) == message
