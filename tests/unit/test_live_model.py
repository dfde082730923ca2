"""LiveModel and the cell/table renderings: pure Python, no widgets, no Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import sys
import threading

import pytest

from kafkasql_magic.live import LiveModel, format_cell
from kafkasql_magic.live.render import MAX_CELL


def test_stream_keeps_last_max_rows_in_arrival_order():
    m = LiveModel(["ID"], max_rows=3)
    m.on_batch(0, [(1,), (2,)])
    m.on_batch(1, [(3,), (4,), (5,)])
    snap = m.snapshot()
    assert snap.rows == ((3,), (4,), (5,))
    assert snap.rows_total == 5
    assert snap.batch_id == 1


def test_table_keeps_latest_row_per_key_most_recent_last():
    m = LiveModel(["K", "V"], key_columns=["K"], max_rows=3)
    m.on_batch(0, [("a", 1), ("b", 1), ("c", 1)])
    m.on_batch(1, [("a", 2)])  # replaces a's row and moves it to the end
    assert m.snapshot().rows == (("b", 1), ("c", 1), ("a", 2))
    m.on_batch(2, [("d", 1)])  # b is least recently updated: it goes
    assert m.snapshot().rows == (("c", 1), ("a", 2), ("d", 1))
    assert m.snapshot().rows_total == 5


def test_table_with_compound_and_struct_keys():
    m = LiveModel(["K1", "K2", "V"], key_columns=["K1", "K2"])
    m.on_batch(0, [({"x": [1]}, 1, "old"), ({"x": [1]}, 2, "other"), ({"x": [1]}, 1, "new")])
    assert [r[2] for r in m.snapshot().rows] == ["other", "new"]


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        LiveModel(["A"], key_columns=["B"])
    m = LiveModel(["A", "B"])
    with pytest.raises(ValueError):
        m.on_batch(0, [(1,)])
    with pytest.raises(ValueError):
        m.set_state("PAUSED")


def test_states_and_progress():
    m = LiveModel(["A"])
    assert m.state == "STARTING"
    m.on_batch(7, [(1,)])
    m.on_records_read(4)
    snap = m.snapshot()
    assert snap.state == "RUNNING"  # the first batch means the query runs
    assert snap.input_rows_total == 4
    assert snap.last_update is not None
    m.set_state("FAILED", "boom: broker gone")
    snap = m.snapshot()
    assert (snap.state, snap.message, snap.terminal) == ("FAILED", "boom: broker gone", True)
    m.on_batch(9, [(2,)])
    assert m.state == "FAILED"  # a late batch does not revive a finished query
    assert "boom: broker gone" in m.to_text()


def test_a_running_query_shows_what_it_waits_for_until_it_ends():
    m = LiveModel(["A"])
    waiting = "waiting for the schema registry at http://r:8081 (not answering since 10:00:00 UTC)"
    m.set_message(waiting)
    assert (m.state, m.snapshot().message) == ("STARTING", waiting)
    assert waiting in m.to_text() and waiting in m.to_html()
    m.on_batch(1, [(1,)])
    m.set_message(None)
    assert (m.state, m.snapshot().message) == ("RUNNING", None)
    m.set_state("FAILED", "Schema registry at http://r:8081 did not answer for 300s")
    m.set_message(waiting)  # the watcher's last probe must not hide why the query failed
    assert m.snapshot().message == "Schema registry at http://r:8081 did not answer for 300s"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_rates_are_current_fall_to_zero_when_idle_and_vanish_when_stopped():
    clock = Clock()
    m = LiveModel(["A"], clock=clock)
    assert m.snapshot().rows_per_second == 0  # running, nothing yet
    clock.now += 2
    m.on_batch(0, [(1,)] * 10)
    m.on_records_read(12)
    snap = m.snapshot()
    assert (snap.rows_per_second, snap.input_rows_per_second) == (5.0, 6.0)  # the first batch has rates
    clock.now += 3
    m.on_batch(1, [(1,)] * 5)
    m.on_records_read(17)
    assert m.snapshot().rows_per_second == 3.0  # 15 rows in the 5 s window
    clock.now += 5.5
    seen = []
    m.subscribe(seen.append)
    m.tick()  # idle: the view ticks every second
    assert seen and seen[-1].rows_per_second == 0 and seen[-1].input_rows_per_second == 0
    assert seen[-1].recent_rows[-9:] == (10, 0, 0, 5, 0, 0, 0, 0, 0)  # per second, oldest first
    m.set_state("STOPPED")
    assert m.snapshot().rows_per_second is None and m.snapshot().input_rows_per_second is None
    count = len(seen)
    m.tick()
    assert len(seen) == count  # a stopped query does not tick


def test_records_read_count_towards_the_current_input_rate_as_their_report_comes_in():
    clock = Clock()
    m = LiveModel(["A"], clock=clock)
    seen = []
    m.subscribe(seen.append)
    clock.now += 2
    m.on_batch(0, [(1,)] * 4)  # the batch's progress report is not in yet
    m.on_records_read(6)  # ... now it is: the first batch has an input rate
    snap = m.snapshot()
    assert (snap.input_rows_total, snap.input_rows_per_second, snap.rows_per_second) == (6, 3.0, 2.0)
    count = len(seen)
    m.on_records_read(6)  # the same report seen again (the watcher polls): no change
    m.on_records_read(5)
    assert len(seen) == count and m.snapshot().input_rows_total == 6
    clock.now += 6
    m.tick()
    assert m.snapshot().input_rows_per_second == 0  # idle


def test_errors_show_partition_and_offset():
    m = LiveModel(["A"])
    m.on_errors(1, [{"PARTITION": 2, "OFFSET": 41, "MESSAGE": "bad JSON"}])
    assert m.snapshot().latest_errors == ("partition 2, offset 41: bad JSON",)


def test_errors_keep_count_and_last_five_messages():
    m = LiveModel(["A"])
    m.on_errors(3, ["e1", "e2", "e3"])
    m.on_errors(7, ["e4", "e5", "e6", "e7"])
    snap = m.snapshot()
    assert snap.error_count == 7
    assert snap.latest_errors == ("e3", "e4", "e5", "e6", "e7")


def test_snapshot_does_not_change_when_the_model_does():
    m = LiveModel(["A"], max_rows=2)
    m.on_batch(0, [(1,)])
    m.on_errors(1, ["e1"])
    snap = m.snapshot()
    m.on_batch(1, [(2,), (3,)])
    m.on_errors(2, ["e2"])
    m.set_state("STOPPED")
    assert snap.rows == ((1,),)
    assert (snap.rows_total, snap.batch_id, snap.state) == (1, 0, "RUNNING")
    assert snap.latest_errors == ("e1",)
    with pytest.raises(AttributeError):
        snap.state = "X"


def test_subscribers_get_each_change_until_unsubscribed():
    m = LiveModel(["A"])
    seen = []
    m.subscribe(seen.append)
    m.on_batch(0, [(1,)])
    m.on_errors(1, ["x"])
    m.set_state("STOPPED")
    assert [s.state for s in seen] == ["RUNNING", "RUNNING", "STOPPED"]
    assert [s.version for s in seen] == sorted({s.version for s in seen})
    m.unsubscribe(seen.append)
    m.on_batch(1, [(2,)])
    assert len(seen) == 3


def test_a_failing_subscriber_does_not_break_the_batch():
    m = LiveModel(["A"])
    seen = []

    def broken(_snap):
        raise RuntimeError("view bug")

    m.subscribe(broken)
    m.subscribe(seen.append)
    m.on_batch(0, [(1,)])
    assert m.snapshot().rows_total == 1 and len(seen) == 1


def test_concurrent_batches_count_exactly():
    m = LiveModel(["T", "I"], max_rows=50)
    notified = []
    m.subscribe(lambda s: notified.append(s.version))
    threads, per_thread, batches = 8, 200, 5
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # force interleaving
    try:
        def work(t):
            for b in range(batches):
                m.on_batch(b, [(t, i) for i in range(per_thread // batches)])

        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    finally:
        sys.setswitchinterval(old)
    snap = m.snapshot()
    assert snap.rows_total == threads * per_thread
    assert len(snap.rows) == 50
    assert sorted(notified) == list(range(1, threads * batches + 1))  # one version per change


# -- rendering ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),  # as ksqlDB's CLI spells it
        (b"\x00\xffA", r"\x00\xffA"),  # bytes readable: printable UTF-8 as text, other bytes as \xNN
        (bytearray(b"caf\xc3\xa9\x01"), r"café\x01"),
        ([{"KEY": "tenant", "VALUE": b"acme"}, {"key": "v", "value": None}], "[tenant=acme, v=null]"),  # headers
        ({"A": 1, "B": "x, y", "C": None}, '{"A": 1, "B": "x, y", "C": null}'),
        ([1, "a", [2, None]], '[1, "a", [2, null]]'),
        (True, "true"),
        (3, "3"),
        (1.5, "1.5"),
        (decimal.Decimal("1.10"), "1.10"),
        (dt.datetime(2024, 5, 1, 12, 30), "2024-05-01T12:30:00.000"),  # ISO 8601, milliseconds
        (dt.datetime(2024, 5, 1, 12, 30, 0, 1500, tzinfo=dt.timezone.utc), "2024-05-01T12:30:00.001500Z"),
        ("plain", "plain"),
        ("two\nlines\t", r"two\nlines\t"),
    ],
)
def test_format_cell(value, text):
    assert format_cell(value) == text


def test_long_cells_are_truncated():
    out = format_cell("x" * 500)
    assert len(out) == MAX_CELL and out.endswith("…")
    assert len(format_cell({"k": "y" * 500})) == MAX_CELL


def test_html_escapes_values_columns_title_and_errors():
    m = LiveModel(["<C>"], title="<T>")
    m.on_batch(0, [("<script>alert(1)</script>",), ({"<k>": b"<"},)])
    m.on_errors(1, ["<img src=x onerror=alert(1)>"])
    m.set_state("FAILED", "<b>bad</b>")
    out = m.to_html()
    assert "<script>" not in out and "<img" not in out and "<b>bad" not in out
    assert "<C>" not in out and "<T>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "&lt;b&gt;bad&lt;/b&gt;" in out


def test_text_table_lines_up():
    m = LiveModel(["ID", "NAME"], title="people")
    m.on_batch(3, [(1, "alice"), (22, None)])
    lines = m.to_text().splitlines()
    assert lines[0] == "people"
    assert "batch: 3" in lines[1] and "rows: 2" in lines[1]
    table = lines[2:]
    assert table[1] == "| ID | NAME  |"
    assert table[3] == "| 22 | null  |"  # newest first
    assert table[4] == "| 1  | alice |"
    assert len({len(line) for line in table}) == 1


def test_html_table_reads_at_a_glance():
    """One line of SQL above the table (full text on hover), one line per row, numbers right-aligned,
    newest row on top, and a sparkline of rows per second beside the status."""
    import re

    from kafkasql_magic.live import render

    clock = Clock()
    sql = "SELECT id,\n       name\nFROM people EMIT CHANGES;"
    m = LiveModel(["ID", "NAME"], title=sql, clock=clock)
    m.on_batch(0, [(1, "alice")])
    clock.now += 2
    m.on_batch(1, [(22, "bob"), (3, None)])
    snap = m.snapshot()
    table = render.table_html(snap)
    caption = re.search(r'<div class="kstream-sql" title="([^"]*)" style="([^"]*)">([^<]*)</div>', table)
    assert caption and caption.group(3) == "SELECT id, name FROM people EMIT CHANGES;"
    assert caption.group(1) == sql  # the full text, on hover
    assert "white-space:nowrap" in caption.group(2) and "text-overflow:ellipsis" in caption.group(2)
    cells = re.findall(r'<td style="([^"]*)">([^<]*)</td>', table)
    assert [text for _, text in cells] == ["3", "null", "22", "bob", "1", "alice"]  # newest first
    assert all("white-space:nowrap" in style for style, _ in cells)
    aligned = {text: re.search(r"text-align:(\w+)", style).group(1) for style, text in cells}
    assert aligned == {"3": "right", "22": "right", "1": "right", "null": "left", "bob": "left", "alice": "left"}
    status = render.status_html(snap)
    spark = re.search(r'<span class="kstream-spark"[^>]*>([^<]*)</span>', status)
    assert spark and spark.group(1).endswith("▅▁█")  # 1 row two seconds ago, 2 rows now
