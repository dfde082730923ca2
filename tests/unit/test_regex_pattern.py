"""FORMAT REGEX patterns: Rust syntax rewritten for Java, columns named as Materialize names them. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats.regex import compile_pattern, regex_fields, regex_spec
from kafkasql_magic.sql.ast import Type


def test_named_groups_become_numbered_and_keep_their_names():
    p = compile_pattern(r"(?P<ip_addr>\d+(?:\.\d+){3}) (?<user>\w+) \[(?P<ts>[^\]]+)\]")
    assert p.java == r"(\d+(?:\.\d+){3}) (\w+) \[([^\]]+)\]"
    assert p.names == ("ip_addr", "user", "ts")
    assert [p.java[i] for i in p.openings] == ["(", "(", "("]


def test_unnamed_groups_are_column_n_by_group_number():
    assert compile_pattern(r"(a)(?P<b>b)(c)").names == ("column1", "b", "column3")


def test_parentheses_that_are_not_groups():
    p = compile_pattern(r"\((?P<x>[()]+)\)(?=y)(?<=z)(?<!w)(?i:q)")
    assert p.names == ("x",)
    assert p.java == r"\(([()]+)\)(?=y)(?<=z)(?<!w)(?i:q)"
    assert compile_pattern(r"[]()](?P<a>.)").names == ("a",)
    assert compile_pattern(r"[^]()](?P<a>.)").names == ("a",)


def test_took_part_marks_the_group_inside_an_atomic_first_match():
    p = compile_pattern(r"(?P<a>a)-(?P<b>x)?")
    assert p.took_part(2) == r"^(?>[\s\S]*?(?:(a)-((?<mzmark>)x)?))\k<mzmark>"


def test_fields_and_spec():
    assert [(f.name, f.type) for f in regex_fields(r"(?P<k>\w+)=(.*)")] == [
        ("k", Type("STRING")), ("column2", Type("STRING"))]
    assert regex_spec("(a)").options == {"REGEX": "(a)"}


@pytest.mark.parametrize("bad", ["(a", "a)", "(?P<1x>a)", "[a"])
def test_invalid_patterns_are_user_errors(bad):
    with pytest.raises(StatementError, match="parsing regex: "):
        compile_pattern(bad)
