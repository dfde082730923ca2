"""The magic in a real IPython shell, for what needs no broker or Spark: usage, errors, displays."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "kafkasql_magic")
    yield ip
    ip.run_line_magic("unload_ext", "kafkasql_magic")


def test_help_starts_with_the_usage_line(shell):
    with capture_output() as out:
        shell.run_line_magic("kstream", "--help")
    first, *rest = out.stdout.splitlines()
    assert first.startswith("%kstream [-h]") and "::" not in out.stdout.split("Streaming SQL")[0]
    assert "::" not in out.stdout and "EMIT CHANGES" in out.stdout and "--max-rows N" in out.stdout


@pytest.fixture
def unreachable(shell):
    """A cluster nobody answers on: enough for statements that fail before they reach it."""
    import kafkasql_magic.magic as magic

    shell.run_line_magic("config", "KStreamMagics.bootstrap_servers = '127.0.0.1:9'")
    yield magic._sessions.setdefault("127.0.0.1:9", __import__("kafkasql_magic").Session("127.0.0.1:9"))
    shell.run_line_magic("config", "KStreamMagics.bootstrap_servers = None")
    magic._sessions.pop("127.0.0.1:9", None)


def _shown_error(shell, cell: str):
    """What the notebook shows for a failing cell: (error class name, its lines)."""
    shown = {}
    shell._showtraceback = lambda etype, value, stb: shown.update(name=etype.__name__, lines=stb)
    try:
        shell.run_cell(cell)
    finally:
        del shell._showtraceback
    return shown["name"], shown["lines"]


def test_a_sql_error_shows_its_own_class_and_message_without_traceback(shell, unreachable):
    name, lines = _shown_error(shell, "%%kstream\nSELECT a,\n  FROM s EMIT CHANGES;")
    assert name == "SqlSyntaxError" and lines[0].startswith("SqlSyntaxError: line 3:")
    assert lines[-1].strip() == "^" and not any("Traceback" in line or "File " in line for line in lines)


def test_an_unknown_source_says_which_names_are_close(shell, unreachable):
    from kafkasql_magic.catalog import SourceDef
    from kafkasql_magic.formats import FormatSpec

    for name in ("ORDERS", "ORDER_LINES", "PAYMENTS"):
        unreachable.catalog._sources[name] = SourceDef("STREAM", name, name.lower(), FormatSpec("KAFKA"),
                                                       FormatSpec("JSON"), ())
    try:
        name, lines = _shown_error(shell, "%%kstream\nDESCRIBE ordrs;")
    finally:
        unreachable.catalog._sources.clear()
    assert name == "StatementError" and lines == ["StatementError: ORDRS does not exist.",
                                                  "Did you mean ORDERS or ORDER_LINES?"]  # nearest first


def test_long_messages_wrap_between_words():
    from kafkasql_magic.errors import StatementError

    message = "Cannot do this because " + " ".join(f"reason{i}" for i in range(40)) + "."
    lines = StatementError(message)._render_traceback_()
    assert len(lines) > 1 and all(len(line) <= 100 for line in lines)
    assert " ".join(line.strip() for line in lines) == f"StatementError: {message}"


def test_statements_that_succeed_say_so_and_a_failing_one_says_which_it_was(shell, unreachable):
    with capture_output() as out:
        name, lines = _shown_error(shell, "%%kstream\nSET 'auto.offset.reset'='earliest';\nSET 'auto.offset.reset'='latest';"
                                          "\nTERMINATE NOPE_1;\nDEFINE x = 'y';")
    assert out.stdout.splitlines() == [
        "Successfully changed local property 'auto.offset.reset' to 'earliest'. Use the UNSET command to revert "
        "your change.",
        "Successfully changed local property 'auto.offset.reset' from 'earliest' to 'latest'."]
    assert name == "StatementError" and " ".join(line.strip() for line in lines[1:]) == (
        "Statement 3 of 4 failed; statements 1-2 before it ran (what they did stays done); statement 4 did not run.")
    assert "x" not in unreachable.variables


def test_a_finite_result_shows_as_a_table_and_binds_its_dataframe(shell, unreachable):
    import pandas as pd

    long = "v" * 30 + " " + "w" * 40
    shell.run_cell_magic("kstream", "", f"DEFINE long_one = '{long}';")
    shown = shell.run_cell_magic("kstream", "listed <<", "SHOW VARIABLES;")
    assert type(shell.user_ns["listed"]) is pd.DataFrame  # bound untouched
    assert isinstance(shown, pd.DataFrame) and shown.equals(shell.user_ns["listed"])  # shown as a table
    assert f">{long}</td>" in shown._repr_html_() and "1 row" in shown._repr_html_()
