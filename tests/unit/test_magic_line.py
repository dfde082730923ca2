"""The magic line: options, `--` comments, `NAME <<` and the SQL kept as typed."""

import argparse

import pytest

from kafkasql_magic.magic_line import LineError, split_line


@pytest.fixture
def parser():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-o", "--output")
    p.add_argument("--max-rows", type=int)
    p.add_argument("-f", "--file")
    return p


def test_options_then_sql_kept_as_typed(parser):
    line = split_line("--max-rows 5 -o out SELECT 'a  b' FROM s WHERE x = -1;", parser)
    assert line.options == ["--max-rows", "5", "-o", "out"]
    assert line.sql == "SELECT 'a  b' FROM s WHERE x = -1;" and line.target is None


def test_a_dashdash_word_that_is_no_option_starts_a_comment(parser):
    assert split_line("-o rows -- read three rows", parser).options == ["-o", "rows"]
    assert split_line("-o rows --read three rows", parser).sql == ""
    assert split_line("--max-rows=7 -- x", parser).options == ["--max-rows=7"]


def test_assignment_target(parser):
    line = split_line("--max-rows 2 df << SELECT 1;", parser)
    assert line.target == "df" and line.sql == "SELECT 1;" and line.options == ["--max-rows", "2"]
    assert split_line("df<<", parser).target == "df"


def test_quoted_option_value_is_one_word(parser):
    assert split_line("-f 'my file.sql'", parser).options == ["-f", "'my file.sql'"]


def test_unknown_short_option_and_missing_value_are_errors(parser):
    with pytest.raises(LineError, match="unknown option -x"):
        split_line("-x SELECT 1;", parser)
    with pytest.raises(LineError, match="--max-rows needs a value"):
        split_line("--max-rows", parser)
