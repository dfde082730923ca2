"""Python variables in SQL become literals, never SQL text."""

from decimal import Decimal

import pytest

from kafkasql_magic.pyvars import VariableError, substitute


def test_values_become_literals():
    ns = {"n": 3, "x": 1.5, "name": "o'hara", "ok": True, "nothing": None, "d": Decimal("2.50")}
    text = "SELECT * FROM s WHERE a = {n} AND b > :x AND c = :name AND d = {ok} AND e IS {nothing} AND f = :d;"
    assert substitute(text, ns) == ("SELECT * FROM s WHERE a = 3 AND b > 1.5 AND c = 'o''hara' AND d = TRUE "
                                    "AND e IS NULL AND f = 2.50;")


def test_a_string_cannot_inject_sql():
    evil = "x'; DROP STREAM s; --"
    assert substitute("SELECT * FROM s WHERE c = {v};", {"v": evil}) == \
        "SELECT * FROM s WHERE c = 'x''; DROP STREAM s; --';"


def test_strings_identifiers_comments_defines_and_casts_are_left_alone():
    text = ("SELECT '{v}', \"{v}\", `:v`, ${v}, a::int, MAP('k' := 1) FROM s -- {v}\n"
            "/* :v */ WHERE t = '12:30';")
    assert substitute(text, {"v": 1}) == text


def test_unknown_variable_names_its_position():
    with pytest.raises(VariableError, match=r"'missing' for :missing at line 2:11"):
        substitute("\nWHERE a = :missing", {})


def test_types_without_a_literal_are_refused():
    with pytest.raises(VariableError, match="'xs' at line 1:1 is a list"):
        substitute("{xs}", {"xs": [1]})
    with pytest.raises(VariableError, match="is a float"):
        substitute("{f}", {"f": float("nan")})
