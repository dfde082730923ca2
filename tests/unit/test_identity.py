"""Golden round trips: every expression of tests/fixtures/identity.sql parses, renders and
parses again (as ksql, the text render() writes) to the same AST."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasql_magic.sql import parse_statement
from kafkasql_magic.sql.render import render

FIXTURE = Path(__file__).parents[1] / "fixtures" / "identity.sql"


def cases() -> list[tuple[str, str]]:
    dialect, found = None, []
    for line in FIXTURE.read_text().splitlines():
        if line.startswith("-- dialect:"):
            dialect = line.split(":", 1)[1].strip()
        elif line.strip() and not line.startswith("--"):
            found.append((dialect, line.strip()))
    return found


def expression(text: str, dialect: str):
    (item,) = parse_statement(f"SELECT {text} FROM s", dialect=dialect).items
    return item.expr


def test_the_fixture_covers_both_dialects():
    assert {d for d, _ in cases()} == {"ksql", "materialize"}


@pytest.mark.parametrize("dialect, text", cases())
def test_parse_render_parse_is_identity(dialect, text):
    parsed = expression(text, dialect)
    assert expression(render(parsed), "ksql") == parsed
