"""Golden round trips of statements: every statement of tests/fixtures/identity_statements.sql
parses, renders in its own dialect to its canonical text, and that text parses back to the
same AST (positions aside). Secrets render masked, so there the AST matches with the secret
masked."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import NamedTuple

import pytest

from kafkasql_magic import redact
from kafkasql_magic.dialects.connections import SECRET_ONLY
from kafkasql_magic.sql import ast, ast_materialize, parse_statement
from kafkasql_magic.sql.render_materialize import MASKED_OPTIONS, MATERIALIZE_WRITER
from kafkasql_magic.sql.render_statements import KSQL_WRITER, duration, render_statement

FIXTURE = Path(__file__).parents[1] / "fixtures" / "identity_statements.sql"


class Case(NamedTuple):
    dialect: str
    text: str
    canonical: str


def cases() -> list[Case]:
    dialect, found = None, []
    for line in FIXTURE.read_text().splitlines():
        if line.startswith("-- dialect:"):
            dialect = line.split(":", 1)[1].strip()
        elif line.startswith("-- renders:"):
            found[-1] = found[-1]._replace(canonical=line.split(":", 1)[1].strip())
        elif line.strip() and not line.startswith("--"):
            found.append(Case(dialect, line.strip(), line.strip()))
    return found


def masked(stmt):
    """`stmt` as its rendering reads back: secret values written as `[hidden]`."""
    if isinstance(stmt, ast_materialize.CreateSecret):
        return dataclasses.replace(stmt, value=redact.HIDDEN)
    if isinstance(stmt, ast_materialize.CreateConnection):
        options = tuple(dataclasses.replace(o, value=redact.url(o.value) if o.name not in MASKED_OPTIONS or
                                            o.value is None else redact.HIDDEN) for o in stmt.options)
        return dataclasses.replace(stmt, options=options)
    if isinstance(stmt, ast.SetProperty) and redact.is_secret(stmt.name):
        return dataclasses.replace(stmt, value=redact.HIDDEN)
    return stmt


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"{c.dialect}:{c.text[:60]}")
def test_parse_render_parse_is_identity(case):
    parsed = parse_statement(case.text, dialect=case.dialect)
    rendered = render_statement(parsed, case.dialect)
    assert rendered == case.canonical
    assert parse_statement(rendered, dialect=case.dialect) == masked(parsed)


def _statement_classes(module) -> set[type]:
    return {c for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, ast.Statement) and c is not ast.Statement and c.__module__ == module.__name__}


def _parsed_classes(dialect: str) -> set[type]:
    return {type(parse_statement(c.text, dialect=c.dialect)) for c in cases() if c.dialect == dialect}


def test_every_statement_class_has_a_renderer():
    every = _statement_classes(ast.statements) | _statement_classes(ast_materialize)
    rendered = set(KSQL_WRITER.statements) | set(MATERIALIZE_WRITER.statements)
    assert sorted(c.__name__ for c in every - rendered) == []


def test_the_fixture_covers_every_renderer_of_each_dialect():
    assert _parsed_classes("ksql") == set(KSQL_WRITER.statements)
    assert _parsed_classes("materialize") == set(MATERIALIZE_WRITER.statements)


def test_the_fixture_holds_canonical_text_mostly():
    found = cases()
    assert len(found) >= 80
    assert sum(c.text == c.canonical for c in found) > 0.75 * len(found)


def test_a_secret_never_shows():
    secret = "s3cr3t-value-never-shown"
    statements = [
        (f"CREATE SECRET pw AS '{secret}'", "materialize"),
        (f"CREATE CONNECTION c TO KAFKA (BROKER 'b:1', SASL PASSWORD = '{secret}', SSL KEY = '{secret}')", "materialize"),
        (f"CREATE CONNECTION r TO CONFLUENT SCHEMA REGISTRY (URL 'http://u:{secret}@h:1')", "materialize"),
        (f"CREATE SOURCE s FROM KAFKA BROKER 'b:1' TOPIC 't' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
         f"'https://u:{secret}@h'", "materialize"),
        (f"SET 'ssl.keystore.password'='{secret}'", "ksql"),
        (f"CREATE STREAM s (v STRING) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', SECRET_THING='{secret}')", "ksql"),
    ]
    for text, dialect in statements:
        rendered = render_statement(parse_statement(text, dialect=dialect), dialect)
        assert secret not in rendered and redact.HIDDEN in rendered, rendered


def test_options_masked_as_text_are_those_materialize_takes_only_from_a_secret():
    assert MASKED_OPTIONS == SECRET_ONLY


@pytest.mark.parametrize("ms, text", [(0, "0 SECONDS"), (1, "1 MILLISECONDS"), (1500, "1500 MILLISECONDS"),
                                      (90_000, "90 SECONDS"), (7_200_000, "2 HOURS"), (86_400_000, "1 DAYS")])
def test_a_duration_is_written_in_its_largest_exact_unit(ms, text):
    assert duration(ms) == text


def test_a_dialect_object_picks_its_writer():
    from kafkasql_magic.sql import get_dialect

    stmt = parse_statement("SHOW COLUMNS FROM t", dialect="materialize")
    assert render_statement(stmt, get_dialect("materialize")) == "SHOW COLUMNS FROM t"
    assert render_statement(stmt, "ksql") == "DESCRIBE `t`"  # a lower-case name, quoted in ksql
