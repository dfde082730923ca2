"""The live chart (`--chart`): its option, the points it draws and its SVG. No Spark."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from kafkasql_magic.live import LiveModel
from kafkasql_magic.live.chart import ChartError, ChartSpec, chart_svg, parse_chart, series

COLUMNS = ("ITEM", "WINDOWSTART", "TOTAL")


def test_the_option_names_a_kind_and_columns_of_the_result():
    assert parse_chart("x=windowstart y=TOTAL", COLUMNS) == ChartSpec("line", "WINDOWSTART", "TOTAL")
    assert parse_chart("bar x=ITEM y=total by=item", COLUMNS) == ChartSpec("bar", "ITEM", "TOTAL", "ITEM")
    for text, message in [("pie x=ITEM y=TOTAL", "unknown kind 'pie'"), ("x=ITEM", "needs y=COL"),
                          ("x=ITEM y=PRICE", "no column 'PRICE' in the result (columns: ITEM, WINDOWSTART, TOTAL)"),
                          ("x=ITEM y=TOTAL colour=red", "'colour=red' is not x=COL, y=COL or by=COL")]:
        with pytest.raises(ChartError, match=re.escape(message)):
            parse_chart(text, COLUMNS)


def test_points_per_series_sorted_by_x_nulls_left_out():
    rows = [("pear", 2000, 5), ("apple", 1000, 3), ("apple", 2000, None), ("apple", 3000, 4),
            ("pear", 1000, 1)]
    drawn = series(ChartSpec("line", "WINDOWSTART", "TOTAL", "ITEM"), COLUMNS, rows)
    assert drawn == {"pear": [(1000.0, 1.0, "1000"), (2000.0, 5.0, "2000")],
                     "apple": [(1000.0, 3.0, "1000"), (3000.0, 4.0, "3000")]}
    stamps = [(None, dt.datetime(2024, 1, 1, 0, 0, 5, tzinfo=dt.timezone.utc), 2)]
    (point,) = series(ChartSpec("line", "WINDOWSTART", "TOTAL"), COLUMNS, stamps)["TOTAL"]
    assert point[2] == "2024-01-01T00:00:05.000Z"  # a time axis labelled as the table shows times
    by_text = series(ChartSpec("bar", "ITEM", "TOTAL"), COLUMNS, [("b", 0, 1), ("a", 0, 2)])
    assert by_text == {"TOTAL": [(0.0, 1.0, "b"), (1.0, 2.0, "a")]}  # text x in order of appearance


def test_the_svg_grows_with_the_rows():
    spec = ChartSpec("line", "WINDOWSTART", "TOTAL", "ITEM")
    empty = chart_svg(spec, COLUMNS, [])
    assert empty.startswith('<svg class="kstream-chart"') and "no rows to chart yet" in empty
    one = chart_svg(spec, COLUMNS, [("apple", 1000, 3)])
    more = chart_svg(spec, COLUMNS, [("apple", 1000, 3), ("apple", 2000, 6), ("pear", 1000, 2)])
    assert one.count("<circle") == 1 and more.count("<circle") == 3 and more.count("<polyline") == 2
    assert "■ apple" in more and "■ pear" in more and "apple 2000: 6" in more  # legend, hover titles
    bars = chart_svg(ChartSpec("bar", "ITEM", "TOTAL"), COLUMNS, [("apple", 0, 3), ("pear", 0, -1)])
    assert bars.count("<rect") == 2 and "<polyline" not in bars
    assert "<polygon" in chart_svg(ChartSpec("area", "WINDOWSTART", "TOTAL"), COLUMNS, [("a", 1, 1), ("a", 2, 2)])


def test_the_widget_draws_the_chart_above_its_table_as_rows_come():
    from kafkasql_magic.live.view import LiveView

    model = LiveModel(list(COLUMNS), key_columns=["ITEM", "WINDOWSTART"])
    view = LiveView(model, on_stop=lambda: None, min_interval=0,
                    chart=ChartSpec("line", "WINDOWSTART", "TOTAL", "ITEM"))
    assert view.chart.value.count("<circle") == 0
    model.on_batch(0, [("apple", 1000, 3), ("pear", 1000, 2)])
    model.on_batch(1, [("apple", 2000, 5)])
    assert view.chart.value.count("<circle") == 3 and view.chart in view.widget.children
    assert LiveView(LiveModel(["A"]), on_stop=lambda: None).chart is None
