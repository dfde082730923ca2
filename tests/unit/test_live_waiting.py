"""What a query shows while it waits: its status line at once (what it reads, for how long, rows so
far), and the Spark session starting. Pure Python: models, renderings, widgets, no Spark."""

from __future__ import annotations

import time

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from kafkasql_magic.engine.analysis.seek import Seek
from kafkasql_magic.kafka.reads import TopicRead
from kafkasql_magic.live import LiveModel
from kafkasql_magic.live.render import PREPARING, format_elapsed, status_text, waiting_line
from kafkasql_magic.live.view import LiveView, StartingView


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


READING = "topic orders: all 4 partitions from the latest offsets (new records only)"


def test_a_waiting_query_says_what_it_reads_and_for_how_long_before_any_row():
    clock = Clock()
    m = LiveModel(["ID", "ITEM"], reading=READING, blocking=True, clock=clock)
    clock.now += 7
    snap = m.snapshot()
    assert snap.elapsed == 7 and "time: 7 s" in status_text(snap) and "rows: 0" in status_text(snap)
    assert waiting_line(snap) == f"waiting for records… · reads {READING} · Interrupt (■) stops the query"
    text = m.to_text()
    assert "| ID | ITEM |" in text and waiting_line(snap) in text  # the columns are there at once
    assert "kstream-waiting" in m.to_html() and "waiting for records…" in m.to_html()


def test_the_waiting_line_counts_records_read_then_rows_and_goes_when_the_query_ends():
    clock = Clock()
    m = LiveModel(["ID"], reading=READING, blocking=True, clock=clock)
    m.on_batch(0, [])
    m.on_records_read(63)
    assert waiting_line(m.snapshot()).startswith("waiting for matching rows… 63 records read · reads topic orders")
    m.on_batch(1, [(1,)])
    assert waiting_line(m.snapshot()).startswith("waiting for more rows…")  # the cell waits for LIMIT rows
    clock.now += 65
    m.set_state("FINISHED")
    clock.now += 30
    snap = m.snapshot()
    assert waiting_line(snap) is None and snap.elapsed == 65  # the time stops with the query
    assert format_elapsed(65) == "1 min 05 s"


def test_a_live_widget_says_stop_ends_it_and_drops_the_line_once_rows_flow():
    m = LiveModel(["ID"])
    assert waiting_line(m.snapshot()) == "waiting for records… · Stop ends it"
    m.on_batch(0, [(1,)])
    assert waiting_line(m.snapshot()) is None


def test_a_waiting_query_has_no_stop_button_a_click_could_not_reach_while_the_cell_runs():
    blocking = LiveView(LiveModel(["ID"], blocking=True), on_stop=lambda: None, min_interval=0)
    live = LiveView(LiveModel(["ID"]), on_stop=lambda: None, min_interval=0)
    assert blocking.button.layout.display == "none" and live.button.layout.display != "none"
    assert "waiting for records…" in blocking.status.value and "<th" in blocking.table.value
    blocking.close(), live.close()


def test_the_spark_start_status_ticks_its_seconds():
    clock = Clock()
    view = StartingView(clock.now, background=False, clock=clock, interval=0)
    assert view.text().startswith("Spark is starting · 0 s · the first query in a kernel starts it")
    clock.now += 12
    assert "12 s" in view.html() and "Spark is starting" in view.html()
    background = StartingView(clock.now - 3, background=True, clock=clock, interval=0)
    assert background.text().startswith("Spark is still starting · 3 s since %load_ext started it")
    assert "text/plain" in background._repr_mimebundle_()


def test_what_a_read_says_it_reads():
    latest = TopicRead("b:9092", "orders", True, "latest")
    assert latest.reading(4) == READING
    assert TopicRead("b:9092", "orders", True, "earliest").reading(1) == \
        "topic orders: all 1 partition from the earliest offsets"
    narrowed = TopicRead("b:9092", "orders", True, {0: 5, 1: 5}, None, (0, 1),
                         seek=Seek(partitions=frozenset({0, 1}), offset_from=5))
    assert narrowed.reading() == "topic orders: partitions 0, 1, from offset 5 to no end (follows new records)"


class FakeQuery:
    def __init__(self, model):
        self.model = model
        self.view = self.chart = None
        self.stopped = 0

    def stop_soon(self):
        self.stopped += 1


def _shows(view, text: str) -> bool:
    """The view renders at most every quarter second: whether `text` is in its status line within a second."""
    deadline = time.monotonic() + 1
    while text not in view.status.value and time.monotonic() < deadline:
        time.sleep(0.05)
    return text in view.status.value


def test_a_query_shows_its_columns_and_status_from_its_plan_on_spark_starting_in_the_same_line():
    """One display per cell: the query's view, shown as its statement is planned, says what goes on
    before it reads (preparing, Spark starting with its seconds) in its own status line."""
    from IPython.display import display

    from kafkasql_magic.live.feedback import CellFeedback

    InteractiveShell.instance()
    model = LiveModel(["ID"], blocking=True)
    model.set_phase(PREPARING)
    with capture_output() as out:
        feedback = CellFeedback(display)
        feedback.query_starting(model)
        assert "| ID |" in out.outputs[0].data["text/plain"] and "preparing the query…" in out.outputs[0].data["text/plain"]
        view = feedback._shown
        feedback.spark_starting(time.monotonic() - 12, background=False)
        assert _shows(view, "Spark is starting · 12 s") and "<th" in view.table.value
        feedback.spark_started()
        assert _shows(view, "preparing the query…")
        query = FakeQuery(model)
        feedback.query_started(query)
        model.set_reading(READING)
        model.set_phase(None)  # started
        assert _shows(view, f"waiting for records… · reads {READING}") and query.view is view
        feedback.close()
    assert len(out.outputs) == 2 and out.outputs[-1].data == {}  # one display, cleared: the result is what stays
    assert "application/vnd.jupyter.widget-view+json" in out.outputs[0].data


def test_a_live_query_keeps_its_view_and_its_stop_button_stops_it():
    from IPython.display import display

    from kafkasql_magic.live.feedback import CellFeedback

    InteractiveShell.instance()
    model = LiveModel(["ID"])
    with capture_output() as out:
        feedback = CellFeedback(display, chart="bar x=ID y=ID")
        feedback.query_starting(model)
        query = FakeQuery(model)
        feedback.query_started(query)
        assert feedback.close(keep=query) is not None
    assert len(out.outputs) == 1 and query.view.chart is not None and query.chart.kind == "bar"
    query.view.button.click()
    assert query.stopped == 1
    query.view.close()


def test_without_a_query_the_cell_says_spark_is_starting_then_clears_it():
    from IPython.display import display

    from kafkasql_magic.live.feedback import CellFeedback

    InteractiveShell.instance()
    with capture_output() as out:
        feedback = CellFeedback(display)
        feedback.spark_starting(0.0, background=False)
        feedback.close()
    assert out.outputs[0].data["text/plain"].startswith("Spark is starting") and out.outputs[-1].data == {}
