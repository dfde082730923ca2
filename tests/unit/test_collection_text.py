"""Materialize's (PostgreSQL's) text forms read by type: lists, maps and records, as a quoted
literal cast to one is read. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.sql import collection_text
from kafkasql_magic.sql.ast import Type

INT, TEXT = Type("INT"), Type("STRING")
POINT = Type("STRUCT", fields=(("x", INT), ("y", TEXT)))


def read(text: str, type_: Type):
    return collection_text.parse(text, type_, collection_text.typed_word)


@pytest.mark.parametrize("text, x, y", [
    ("(1,x y)", 1, "x y"),
    ("( 2 , z )", 2, " z "),  # an unquoted field keeps its spaces (a number's are read past)
    ("(,)", None, None),  # an empty field is NULL
    ('(3,"")', 3, ""),  # a quoted empty one is the empty text
    ('(4,"a,b ""c"" \\\\d")', 4, 'a,b "c" \\d'),
    ('(5,NULL)', 5, "NULL"),  # NULL in a record is a word, as in PostgreSQL
])
def test_a_record(text, x, y):
    assert read(text, POINT) == {"x": x, "y": y}


def test_records_inside_lists_and_lists_inside_records():
    assert read('{"(1,2)","(3,)",NULL}', Type("ARRAY", element=POINT)) == [{"x": 1, "y": "2"}, {"x": 3, "y": None},
                                                                           None]
    holder = Type("STRUCT", fields=(("p", POINT), ("l", Type("ARRAY", element=INT))))
    assert read('("(1,a)","{1,2}")', holder) == {"p": {"x": 1, "y": "a"}, "l": [1, 2]}


@pytest.mark.parametrize("text, problem", [
    ("1,2", "missing left parenthesis"),
    ("(1)", "too few columns"),
    ("(1,2,3)", "too many columns"),
    ("(1", "unexpected end of input"),
    ('(1,"x', "unexpected end of input"),
    ("(1,2)x", "junk after right parenthesis"),
    ("(x,2)", 'invalid input syntax for type integer: invalid digit found in string: "x"'),
])
def test_a_malformed_record_says_what_is_wrong(text, problem):
    with pytest.raises(ValueError) as error:
        read(text, POINT)
    assert str(error.value) == problem
