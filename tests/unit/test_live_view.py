"""LiveView headless: widgets are plain objects without a frontend; Button.click() fires."""

from __future__ import annotations

import threading
import time

import pytest

from kafkasql_magic.live import LiveModel, LiveView, render


class FakeStop:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


@pytest.fixture
def model():
    return LiveModel(["ID", "NAME"], title="users")


@pytest.fixture
def stop():
    return FakeStop()


@pytest.fixture
def view(model, stop):
    v = LiveView(model, stop, min_interval=0)
    yield v
    v.close()


def test_batches_show_rows_and_status_numbers(model, view):
    assert view.status.value.count("STARTING") == 1
    model.on_batch(41, [(1, "alice"), (2, "<script>x</script>")])
    model.on_records_read(2)
    model.on_batch(42, [(3, "carol")])
    model.on_records_read(6)
    assert "alice" in view.table.value and "carol" in view.table.value
    assert "&lt;script&gt;x&lt;/script&gt;" in view.table.value
    assert "<script>" not in view.table.value
    status = view.status.value
    for expected in ("RUNNING", "batch: <span>42</span>", "rows: <span>3</span>",
                     "rows/s: <span>3.0</span>", "records in/s: <span>6.0</span>",  # one second so far
                     "errors: <span>0</span>"):
        assert expected in status
    table = view.table.value
    assert table.index("carol") < table.index("alice")  # newest on top
    assert view.widget.children[1] is view.table


def test_stop_calls_on_stop_once_and_shows_stopping(model, view, stop):
    model.on_batch(0, [(1, "a")])
    view.button.click()
    view.button.click()
    assert stop.calls == 1
    assert view.button.disabled and view.button.description == "Stopping…"
    model.on_batch(1, [(2, "b")])  # batches in flight keep arriving while stopping
    assert view.button.description == "Stopping…"
    model.set_state("STOPPED")
    assert view.button.disabled and view.button.description == "Stopped"
    assert "STOPPED" in view.status.value


def test_stop_that_raises_lets_the_user_retry(model):
    calls = []

    def failing():
        calls.append(1)
        raise RuntimeError("no connection")

    v = LiveView(model, failing, min_interval=0)
    v.button.click()  # ipywidgets logs handler exceptions rather than raising them
    assert not v.button.disabled and v.button.description == "Stop"
    assert "no connection" in v.button.tooltip
    v.button.click()
    assert len(calls) == 2


def test_finished_query_disables_stop_without_calling_it(model, view, stop):
    model.set_state("FINISHED")
    view.button.click()
    assert stop.calls == 0
    assert view.button.disabled and view.button.description == "Finished"


def test_failed_state_shows_the_message(model, view):
    model.set_state("FAILED", "Kafka topic 't' does not exist <really>")
    assert "FAILED" in view.status.value
    assert "Kafka topic &#x27;t&#x27; does not exist &lt;really&gt;" in view.status.value
    assert view.button.disabled and view.button.description == "Failed"


def test_errors_area_is_visible_only_with_errors(model, view):
    assert view.errors.layout.display == "none"
    model.on_batch(0, [(1, "a")])
    assert view.errors.layout.display == "none"
    model.on_errors(2, ["bad JSON at offset 7", "bad JSON at offset 9"])
    assert view.errors.layout.display != "none"
    assert "bad JSON at offset 9" in view.errors.value
    assert "errors: <span>2</span>" in view.status.value


def test_text_fallback_and_widget_bundle(model, view):
    model.on_batch(0, [(1, "alice")])
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "alice" in bundle["text/plain"] and "users" in bundle["text/plain"]


def test_close_unsubscribes(model, view):
    model.on_batch(0, [(1, "alice")])
    view.close()
    model.on_batch(1, [(2, "bob")])
    assert "bob" not in view.table.value
    assert model._subscribers == []


def test_throttle_coalesces_and_renders_the_latest_eventually(model, stop):
    v = LiveView(model, stop, min_interval=0.2)
    renders = []
    v.table.observe(lambda change: renders.append(change["new"]), names="value")
    model.on_batch(0, [(0, "first")])  # STARTING -> RUNNING renders at once; the rest wait
    for i in range(1, 30):
        model.on_batch(i, [(i, f"row{i}")])
    assert len(renders) <= 1
    deadline = time.monotonic() + 3
    while "row29" not in v.table.value and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "row29" in v.table.value
    assert len(renders) <= 3  # coalesced, not one render per batch
    v.close()


def test_state_change_renders_at_once_even_when_throttled(model, stop):
    v = LiveView(model, stop, min_interval=60)
    model.on_batch(0, [(1, "a")])  # STARTING -> RUNNING: a state change
    model.on_batch(1, [(2, "b")])  # throttled
    assert "RUNNING" in v.status.value and ">b</td>" not in v.table.value
    model.set_state("STOPPED")
    assert "STOPPED" in v.status.value and ">b</td>" in v.table.value
    v.close()


def test_updates_from_many_threads_end_on_the_latest(model, stop):
    v = LiveView(model, stop, min_interval=0.01)

    def work(t):
        for i in range(50):
            model.on_batch(t * 100 + i, [(t, f"t{t}-{i}")])

    pool = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    model.set_state("STOPPED")
    assert "rows: <span>200 (showing the latest 20 of 200)</span>" in v.status.value
    assert v.table.value == render.table_html(model.snapshot())
    v.close()
