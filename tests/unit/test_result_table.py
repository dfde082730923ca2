"""A finite result's display: the live widget's table, whole text, no index, one row count."""

from __future__ import annotations

import datetime as dt
import html
import re

import pandas as pd

from kafkasql_magic.live.result import TEXT_WIDTH, ResultTable
from kafkasql_magic.results import to_pandas


def _cells(page: str) -> list[str]:
    return [re.sub(r"&#x27;", "'", c) for c in re.findall(r"<td [^>]*>([^<]*)</td>", page)]


def test_every_value_is_whole_and_long_ones_wrap():
    message = "Error computing expression INT_FROM_BYTES(VERSION) for column VERSION with index 2: " + "x " * 60
    frame = pd.DataFrame({"MESSAGE": [message], "N": [7]})
    table = ResultTable(frame)
    page = table._repr_html_()
    assert _cells(page) == [message, "7"]  # pandas cuts at 50 characters; nothing is cut here
    assert "white-space:pre-wrap" in page and "overflow-wrap:anywhere" in page
    text = repr(ResultTable(frame[["MESSAGE"]]))
    body = text.splitlines()[3:-2]  # between the header's rule and the closing rule, above the count
    assert len(body) > 1 and max(len(line) for line in body) <= TEXT_WIDTH + 4
    assert " ".join(line.strip(" |") for line in body) == " ".join(message.split())


def test_no_index_column_and_a_row_count():
    table = ResultTable(pd.DataFrame({"A": [1, 2, 3]}))
    page = table._repr_html_()
    assert re.findall(r"<th [^>]*>([^<]*)</th>", page) == ["A"]
    assert "3 rows" in page and repr(table).splitlines()[-1] == "3 rows"
    assert repr(ResultTable(pd.DataFrame({"A": [1]}))).endswith("\n1 row")
    assert repr(ResultTable(pd.DataFrame(columns=["A"]))).endswith("\n0 rows")


def test_a_long_result_says_how_many_rows_it_does_not_show():
    table = ResultTable(pd.DataFrame({"A": range(30)}), shown_rows=10)
    assert len(_cells(table._repr_html_())) == 10
    assert repr(table).splitlines()[-1].startswith("30 rows (the first 10 shown;")


def test_values_read_as_the_live_widget_shows_them():
    when = dt.datetime(2023, 11, 14, 22, 13, 20, 1000, tzinfo=dt.timezone.utc)
    headers = [{"KEY": "tenant", "VALUE": b"acme"}, {"KEY": "version", "VALUE": b"\x00\x00\x00\x02"}]
    frame = to_pandas([(when, headers, b"\x01hi", 3)], ["TS", "HS", "B", "N"])
    assert _cells(ResultTable(frame)._repr_html_()) == [
        "2023-11-14T22:13:20.001Z", r"[tenant=acme, version=\x00\x00\x00\x02]", r"\x01hi", "3"]
    page = ResultTable(frame)._repr_html_()
    aligned = re.findall(r'<td style="[^"]*text-align:(\w+)">', page)
    assert aligned == ["left", "left", "left", "right"]  # text on the left, numbers on the right


def test_null_has_one_spelling_whatever_pandas_made_of_it():
    frame = to_pandas([(1, None, None, None, "x"), (None, 2.5, dt.datetime(2024, 1, 1), "a", None)],
                      ["I", "D", "T", "S", "S2"])  # Int64's <NA>, float's NaN, NaT, None
    frame["T"] = pd.to_datetime(frame["T"])
    page = ResultTable(frame)._repr_html_()
    assert _cells(page) == ["1", "null", "null", "null", "x", "null", "2.5", "2024-01-01T00:00:00.000", "a", "null"]
    assert page.count("color:#9e9e9e") == 5  # a NULL reads apart from the text 'null'
    assert "NaN" not in repr(ResultTable(frame)) and "<NA>" not in repr(ResultTable(frame))


def test_show_queries_types_a_transient_query_push_without_a_sink():
    from types import SimpleNamespace

    from kafkasql_magic import Session

    session = Session("127.0.0.1:9")
    session.queries["transient_S_1"] = SimpleNamespace(id="transient_S_1", state="RUNNING",
                                                       sql="SELECT *\nFROM s EMIT CHANGES;")
    for statement in ("SHOW QUERIES;", "SHOW QUERIES EXTENDED;"):
        shown = session.sql(statement)
        row = shown.iloc[0].to_dict()
        assert row["Query Type"] == "PUSH" and row["Sink Name"] is None and row["Sink Kafka Topic"] is None
        assert list(shown.columns[:6]) == ["Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic",
                                           "Query String"]
        assert "NaN" not in repr(ResultTable(shown))


def test_a_statement_keeps_its_line_breaks():
    statement = "CREATE STREAM big_orders AS\n  SELECT id, item, qty * 2 AS doubled, price FROM orders WHERE qty > 4\n  EMIT CHANGES;"
    table = ResultTable(pd.DataFrame({"Query ID": ["CSAS_BIG_ORDERS_1"], "Query String": [statement]}))
    page = table._repr_html_()
    assert f">{html.escape(statement)}</td>" in page and "white-space:pre-wrap" in page  # breaks, not a literal \n
    text = repr(table)
    assert "\\n" not in text
    lines = [line.split("|")[2].rstrip() for line in text.splitlines()[3:-2]]
    assert lines[0] == " CREATE STREAM big_orders AS" and lines[-1] == "   EMIT CHANGES;" and len(lines) == 4


def test_short_values_stay_on_one_line_and_long_ones_wrap():
    frame = pd.DataFrame({"STATUS": ["RUNNING"], "TEXT": ["word " * 20]})
    styles = re.findall(r'<td style="([^"]*)">', ResultTable(frame)._repr_html_())
    assert "white-space:pre;" in styles[0] and "overflow-wrap" not in styles[0]  # never 'RUNNIN' / 'G'
    assert "white-space:pre-wrap" in styles[1] and "overflow-wrap:anywhere" in styles[1]
