"""The saved copy beside a live widget: what a notebook saved or exported while a query runs shows."""

from __future__ import annotations

import time

import pytest

from kafkasql_magic.live import LiveModel, LiveView
from kafkasql_magic.live.static import WIDGET_MIME, SavedCopy, live_class, live_style, saved_bundle, saved_class


@pytest.fixture
def model():
    return LiveModel(["ID", "NAME"], title="SELECT * FROM users EMIT CHANGES;")


def test_bundle_holds_the_current_rows_status_and_when(model):
    model.on_batch(7, [(1, "alice"), (2, "bob")])
    bundle = saved_bundle(model.snapshot(), "abc", saved_at=0)
    html = bundle["text/html"]
    assert "RUNNING" in html and "rows: <span>2</span>" in html and "bob" in html and "batch: <span>7</span>" in html
    assert f'<div class="{saved_class("abc")}">' in html
    assert "state at 1970-01-01 00:00:00 UTC" in html
    # without the live widget, its leftover output row ("model not found") is hidden, and only it
    assert f":not([data-mime-type])):not(:has(.{live_class('abc')}))" in html
    assert bundle["text/plain"] == model.snapshot().to_text()


def test_live_widget_carries_the_rule_that_hides_its_saved_copy(model):
    view = LiveView(model, lambda: None, min_interval=0)
    try:
        assert view.token == view.widget.model_id == view._repr_mimebundle_()[WIDGET_MIME]["model_id"]
        assert live_class(view.token) in view.widget._dom_classes
        hider = view.widget.children[-1]
        assert hider.value == live_style(view.token) and hider.layout.display == "none"
        assert f".{saved_class(view.token)}{{display:none}}" in hider.value
    finally:
        view.close()


def test_refresh_publishes_changes_only_and_nothing_after_close(model):
    published = []
    copy = SavedCopy(model, "t", published.append, interval=60)
    assert "STARTING" in copy.bundle()["text/html"]
    copy.refresh()
    assert published == []  # unchanged since the first display
    model.on_batch(0, [(1, "alice")])
    copy.refresh()
    assert len(published) == 1 and "alice" in published[0]["text/html"]
    assert "RUNNING" in published[0]["text/html"]
    copy.refresh()
    assert len(published) == 1
    copy.close()
    copy.close()
    model.on_batch(1, [(2, "bob")])
    copy.refresh()
    assert published[1:] == [{}]  # emptied once: the widget's output holds the final state


def test_terminal_state_is_left_to_the_final_output(model):
    published = []
    copy = SavedCopy(model, "t", published.append, interval=60)
    copy.bundle()
    model.set_state("STOPPED")
    copy.refresh()
    assert published == []


def test_refreshes_on_its_own_at_the_interval(model):
    published = []
    copy = SavedCopy(model, "t", published.append, interval=0.05)
    copy.bundle()
    copy.start()
    try:
        model.on_batch(0, [(1, "alice")])
        deadline = time.monotonic() + 5
        while not published and time.monotonic() < deadline:
            time.sleep(0.02)
        assert published and "alice" in published[-1]["text/html"]
    finally:
        copy.close()


def test_exported_html_shows_the_saved_copy_not_the_widget_text(model):
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    view = LiveView(model, lambda: None, min_interval=0)
    widget = view._repr_mimebundle_()  # STARTING, as the widget's output is first shown
    widget["text/html"] = ""  # as the magic shows it
    model.on_batch(3, [(1, "alice"), (2, "bob")])
    copy = saved_bundle(model.snapshot(), view.token)
    view.close()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%kstream\nSELECT * FROM users EMIT CHANGES;")
    cell.outputs = [nbformat.v4.new_output("display_data", data=widget),
                    nbformat.v4.new_output("display_data", data=copy)]
    nb.cells = [cell]
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert "rows: <span>2</span>" in html and "bob" in html
    assert "STARTING" not in html


def test_the_saved_copy_and_the_final_state_draw_the_chart_above_the_table(model):
    from kafkasql_magic.live.chart import parse_chart
    from kafkasql_magic.live.static import FinalState

    model.on_batch(1, [(1, "alice"), (2, "bob")])
    chart = parse_chart("line x=ID y=ID", model.snapshot().columns)
    for html in (saved_bundle(model.snapshot(), "t", saved_at=0, chart=chart)["text/html"],
                 FinalState(model.snapshot(), chart)._repr_mimebundle_()["text/html"]):
        assert 'class="kstream-chart"' in html and "line of ID by ID" in html
        assert html.index("kstream-chart") < html.index("alice")
    assert "kstream-chart" not in FinalState(model.snapshot())._repr_mimebundle_()["text/html"]
    published = []
    copy = SavedCopy(model, "t", published.append, interval=60, chart=chart)
    assert "kstream-chart" in copy.bundle()["text/html"]
