"""What a statement that succeeded says (ksqlDB's CLI messages; psql's command tags for Materialize)."""

from __future__ import annotations

import pytest

from kafkasql_magic import Session
from kafkasql_magic.catalog import SourceDef
from kafkasql_magic.dialects import get as dialect
from kafkasql_magic.errors import statement_note
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.statements.notices import notice


@pytest.fixture
def session():
    s = Session("127.0.0.1:9")
    s.catalog.add(SourceDef("STREAM", "CLICKS", "clicks", FormatSpec("KAFKA"), FormatSpec("JSON"), ()))
    return s


@pytest.mark.parametrize("sql, said", [
    ("CREATE STREAM s (a INT) WITH (kafka_topic='s', value_format='JSON');", "Stream created"),
    ("CREATE TABLE t (a INT PRIMARY KEY) WITH (kafka_topic='t', value_format='JSON');", "Table created"),
    ("CREATE STREAM IF NOT EXISTS clicks (a INT) WITH (kafka_topic='c', value_format='JSON');",
     "Cannot add stream `CLICKS`: A stream with the same name already exists."),
    ("DROP STREAM clicks;", "Source `CLICKS` (topic: clicks) was dropped."),
    ("DROP STREAM IF EXISTS nope;", "Source `NOPE` does not exist."),
    ("TERMINATE CSAS_X_1;", "Query terminated."),
    ("UNSET 'auto.offset.reset';", None),
    ("DEFINE a = 'b';", None),
    ("INSERT INTO clicks (a) VALUES (1);", None),
    ("SELECT * FROM clicks;", None),
])
def test_ksql_statements_say_what_ksqldbs_cli_says(session, sql, said):
    session.dialect_now = dialect("ksql")
    assert notice(parse_statement(sql), session) == said


def test_materialize_statements_say_their_command_tag(session):
    session.dialect_now = mz = dialect("materialize")
    for sql, tag in [("DROP SINK s;", "DROP SINK"), ("CREATE SECRET p AS 'x';", "CREATE SECRET"),
                     ("CREATE VIEW v AS SELECT * FROM clicks;", "CREATE VIEW"), ("SELECT * FROM clicks;", None)]:
        assert notice(mz.parser.parse_statement(sql), session) == tag


def test_the_note_under_an_error_says_which_statement_failed_and_what_ran():
    assert statement_note(1, 2) == "Statement 1 of 2 failed; statement 2 did not run."
    assert statement_note(2, 2) == "Statement 2 of 2 failed; statement 1 before it ran (what it did stays done)."


def test_set_and_unset_name_the_value_a_set_gave(session):
    session.dialect_now = dialect("ksql")
    session.settings["auto.offset.reset"] = "earliest"
    assert notice(parse_statement("SET 'auto.offset.reset'='latest';"), session) == \
        "Successfully changed local property 'auto.offset.reset' from 'earliest' to 'latest'."
    assert notice(parse_statement("UNSET 'auto.offset.reset';"), session) == \
        "Successfully unset local property 'auto.offset.reset' (value was 'earliest')."


def test_dropping_a_view_from_the_ksql_dialect_names_no_topic(session):
    from kafkasql_magic.catalog import ViewDef

    session.catalog.add(ViewDef("V", query=None))
    session.dialect_now = dialect("ksql")
    assert notice(parse_statement("DROP STREAM v;"), session) == "Source `V` was dropped."
