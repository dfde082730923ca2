"""Materialize's COMMENT ON rules (dialects/comments.py), no Spark: what may be commented, the
messages, and the DOC ON options a sink's relation's comments become."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects.comments import Comments, check_target, sink_docs, with_comment_docs
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sinks.command_log import logged
from kafkasql_magic.sql import parse_statement


def test_a_comment_is_set_replaced_and_removed_with_null_and_goes_with_its_object():
    comments = Comments()
    comments.set("t", None, "old")
    comments.set("t", None, "new")
    comments.set("t", "c", "a column")
    assert (comments.of("t"), comments.parts("t")) == ("new", {"c": "a column"})
    comments.set("t", "c", None)
    assert comments.parts("t") == {}
    comments.drop("t")
    assert comments.of("t") is None


@pytest.mark.parametrize("kind, found, parts, part, message", [
    ("table", None, None, None, "^unknown catalog item 't'$"),
    ("view", "table", ["c"], None, '^"materialize.public.t" is a table not a view$'),
    ("column", "table", ["c"], "nope", '^column "t.nope" does not exist$'),
    ("column", "sink", None, "c", '^"materialize.public.t" is a sink, which has no columns$'),
])
def test_what_cannot_be_commented_gets_materializes_message(kind, found, parts, part, message):
    with pytest.raises(StatementError, match=message):
        check_target(kind, "t", found, parts, part)


def test_a_view_may_be_named_a_materialized_view():
    check_target("materialized view", "v", "view", ["a"], None)


def test_a_sinks_relation_comments_become_shared_doc_on_options_under_the_statements_own():
    comments = Comments()
    comments.set("t", None, "the table")
    comments.set("t", "v", "the v")
    assert [(d.schema, d.kind, d.name, d.text) for d in sink_docs("t", comments)] == [
        ("", "TYPE", ("t",), "the table"), ("", "COLUMN", ("t", "v"), "the v")]
    stmt = parse_statement("CREATE SINK s FROM t INTO KAFKA BROKER 'b:9092' (TOPIC 'o') FORMAT AVRO USING "
                           "CONFLUENT SCHEMA REGISTRY CONNECTION r (DOC ON TYPE t = 'given') ENVELOPE DEBEZIUM",
                           dialect="materialize")
    docs = with_comment_docs(stmt, comments).format.avro_options.docs
    assert [d.text for d in docs] == ["the table", "the v", "given"]  # the statement's own come last: they win
    assert logged(parse_statement("COMMENT ON TABLE t IS 'x'", dialect="materialize"))
