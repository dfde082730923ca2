"""The planner's operator trees, as EXPLAIN prints them, against a golden file (`trees.txt`):
one block per query — `-- dialect [subscribe]`, the query, then its tree. No Spark.

A changed tree is a changed plan: read the difference, then correct the file by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kafkasql_magic.catalog import ViewDef
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.subscribe.rules import subscribed
from kafkasql_magic.engine.tree import explain_lines, tree_of
from kafkasql_magic.engine.tree import nodes as n
from kafkasql_magic.engine.tree.explain import LABELS
from kafkasql_magic.sql import parse_statement

from test_analysis import catalog

GOLDEN = Path(__file__).with_name("trees.txt")


def cases() -> list[tuple[str, bool, bool, str, list[str]]]:
    found = []
    for block in GOLDEN.read_text().strip().split("\n\n"):
        header, query, *tree = block.splitlines()
        words = header.removeprefix("-- ").split()
        found.append((words[0], "subscribe" in words[1:], "per-record" in words[1:], query, tree))
    return found


def _tree(dialect, subscribe, per_record, query):
    stmt = parse_statement(query, dialect=dialect)
    plan = analyse(replace(stmt, emit_changes=True) if subscribe else stmt, with_views(), dialect)
    return tree_of(subscribed(plan) if subscribe else plan, per_record=per_record)


def with_views():
    cat = catalog()
    cat.add(ViewDef("big", parse_statement("SELECT id, item, qty FROM orders WHERE qty > 10", dialect="materialize"),
                    dialect="materialize"))
    return cat


@pytest.mark.parametrize("dialect, subscribe, per_record, query, tree", cases(), ids=[c[3] for c in cases()])
def test_the_tree_of_each_query(dialect, subscribe, per_record, query, tree):
    assert explain_lines(_tree(dialect, subscribe, per_record, query), dialect) == tree


def test_every_node_type_has_a_line_and_the_golden_file_shows_each():
    types = {t for t in vars(n).values() if isinstance(t, type) and issubclass(t, n.Node)
             and t not in (n.Node, n.BinaryJoin, n.ChainJoin)}
    assert types <= set(LABELS)
    shown = set()
    for dialect, subscribe, per_record, query, _ in cases():
        shown |= {type(node) for node in n.walk(_tree(dialect, subscribe, per_record, query))}
    assert types - shown == set()


def test_nodes_are_frozen():
    plan = analyse(parse_statement("SELECT * FROM orders EMIT CHANGES;"), catalog(), "ksql")
    with pytest.raises(AttributeError):
        tree_of(plan).outputs = ()  # type: ignore[misc]
