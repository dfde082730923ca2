"""The notebook as a user lives in it: JupyterLab 4 in Chromium, the embedded stack, a live query
fed from another process, Stop, Interrupt, and the schema pane's Insert."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request

import nbformat
import pytest
from conftest import SCREENSHOTS

PRODUCER = '''
import json, subprocess, sys, textwrap
from kafkasql_magic.local import stack
bootstrap = stack.default().bootstrap_servers

def produce_elsewhere(start, count, pause=0.0):
    """Produce from another process, `pause` seconds between records."""
    code = textwrap.dedent(f"""
        import json, time
        from kafkasql_magic.kafka.producer import produce
        for i in range({start}, {start + count}):
            produce({bootstrap!r}, "clicks", [{{"key": str(i).encode(), "value": json.dumps({{"n": i}}),
                                               "partition": 0}}], create_partitions=1)
            time.sleep({pause})
    """)
    return subprocess.Popen([sys.executable, "-c", code])

produce_elsewhere(0, 3).wait()
'''

CELLS = [
    "%load_ext kafkasql_magic\n%kstream_local start",
    PRODUCER,
    "%%kstream\nSET 'auto.offset.reset'='earliest';\n"
    "CREATE STREAM clicks (k STRING KEY, n INT) WITH (kafka_topic='clicks', value_format='JSON');",
    "%%kstream -o live --chart 'line x=N y=N'\nSELECT k, n FROM clicks EMIT CHANGES;",
    "feeder = produce_elsewhere(3, 60, pause=0.1)",
    "%%kstream --timeout 300\nSELECT * FROM clicks WHERE n < 0 EMIT CHANGES LIMIT 5;",
    "from pyspark.sql import SparkSession\n"
    "from kafkasql_magic.kafka.producer import produce\n"
    "produce(bootstrap, 'clicks', [{'value': '{\"n\": 1000}', 'partition': 0}])  # the broker still answers\n"
    "print('active spark queries:', len(SparkSession.getActiveSession().streams.active))",
    "%kstream schema clicks",
]
LIVE, FEED, WAIT_FOREVER, AFTER_INTERRUPT, SCHEMA = 3, 4, 5, 6, 7


def _notebook(workdir, name: str = "browser.ipynb") -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, workdir / name)
    return name


def _cell(page, index):
    """Cell `index` of the notebook on show (JupyterLab may restore an earlier test's tab behind it)."""
    return page.locator(".jp-Notebook:visible .jp-Cell").nth(index)


def _run(page, index, *, wait: bool = True, timeout: float = 180):
    cell = _cell(page, index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text().strip()
    for _ in range(5):  # a key press can land before the editor has focus: try again
        cell.locator(".jp-InputPrompt").click()  # selects the cell
        page.locator(".jp-NotebookPanel-toolbar:visible [data-command='notebook:run-cell-and-select-next']").click()
        deadline = time.monotonic() + 3
        while prompt.inner_text().strip() == before and time.monotonic() < deadline:
            time.sleep(0.1)
        if prompt.inner_text().strip() != before:
            break
    if wait:
        _wait_done(page, index, timeout)


def _wait_done(page, index, timeout: float = 180):
    prompt = _cell(page, index).locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout
    while not re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip()):
        assert time.monotonic() < deadline, f"cell {index} did not finish: {prompt.inner_text()!r}"
        time.sleep(0.2)


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _shot(page, name: str) -> None:
    """With KAFKASQL_BROWSER_SHOTS=1, a screenshot of each step (to look at the widgets)."""
    if os.environ.get("KAFKASQL_BROWSER_SHOTS"):
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"step-{name}.png"))


def _saved_outputs(path) -> list:
    """The live cell's outputs in the saved notebook; none while the server is still writing the
    file (read between its truncation and its last byte, it is empty or cut short)."""
    try:
        return nbformat.read(path, as_version=4).cells[LIVE].get("outputs", [])
    except nbformat.reader.NotJSONError:
        return []


def _saved_final_state(path) -> bool:
    outputs = _saved_outputs(path)
    data = [o.get("data", {}) for o in outputs]
    return (bool(data) and not any("application/vnd.jupyter.widget-view+json" in d for d in data)
            and any("STOPPED" in d.get("text/html", "") for d in data))


def _saved_copy(path) -> str:
    """The HTML of the live cell's saved copy in the notebook file ("" if none)."""
    outputs = _saved_outputs(path)
    return next((o["data"]["text/html"] for o in outputs if "kstream-saved-" in o.get("data", {}).get("text/html", "")), "")


# Every frame, note whether a saved copy was ever drawn: on the live page it never is, not even for
# the moment before the widget renders.
WATCH_SAVED_COPY = """() => {
  window.kstreamCopyDrawn = false;
  (function watch() {
    for (const el of document.querySelectorAll("[class*='kstream-saved-']")) {
      if (el.getBoundingClientRect().height > 0 && getComputedStyle(el).visibility === "visible") {
        window.kstreamCopyDrawn = true;
      }
    }
    requestAnimationFrame(watch);
  })();
}"""


def _saved_while_running(page, base, token, workdir, name):
    live = _cell(page, LIVE)
    assert page.evaluate("window.kstreamCopyDrawn") is False
    assert live.locator(".jp-OutputArea-child:visible").count() == 1  # the copy's row is hidden
    assert live.locator("[class*='kstream-saved-']").first.is_hidden()
    _until(lambda: _status(page)["rows"] == "63", 90, "all 63 records")  # 3 + the feeder's 60

    def saved_current() -> bool:
        page.keyboard.press("Control+s")
        time.sleep(0.5)
        html = _saved_copy(workdir / name)
        return "rows: <span>63 (showing the latest 20 of 63)</span>" in html and "RUNNING" in html

    _until(saved_current, 20, "the current rows in the saved notebook")
    (workdir / "reopened.ipynb").write_text((workdir / name).read_text())
    other = page.context.new_page()
    try:
        other.goto(f"{base}/lab/workspaces/reopened/tree/reopened.ipynb?token={token}")
        cell = other.locator(".jp-Notebook:visible .jp-Cell").nth(LIVE)
        copy = cell.locator("[class*='kstream-saved-']")
        _until(lambda: copy.count() and copy.first.is_visible() and "RUNNING" in copy.first.inner_text(), 60,
               "the saved copy in the reopened notebook")
        other.evaluate(WATCH_SAVED_COPY)  # the watcher does see a copy that is drawn
        _until(lambda: other.evaluate("window.kstreamCopyDrawn"), 10, "the watcher to see the copy")
        widget = cell.locator(".jp-OutputArea-output.jupyter-widgets")  # the widget renderer's error
        _until(lambda: "model not found" in (widget.text_content() or ""), 60,
               "the widget manager to give up on the widget (a new kernel has no such model)")
        assert "63" in copy.first.inner_text()
        assert cell.locator(".jp-OutputArea-child:visible").count() == 1, cell.inner_text()
        for leftover in ("model not found", "Loading widget", "STARTING"):
            assert leftover not in cell.inner_text()
        cell.scroll_into_view_if_needed()
        _shot(other, "reopened")
    finally:
        other.close()
        _shut_down(base, token, "reopened.ipynb")


# Timed in the page: when the cell's prompt turns to [*] (the kernel runs it) and when its status
# line first shows (window.kstreamRunning, window.kstreamShown: performance.now(); window.kstreamStatus its text).
TIME_STATUS = """cell => {
  window.kstreamRunning = window.kstreamShown = window.kstreamStatus = null;
  const prompt = cell.querySelector(".jp-InputPrompt");
  const check = () => {
    const now = performance.now();
    if (window.kstreamRunning === null && prompt.textContent.includes("*")) window.kstreamRunning = now;
    const line = cell.querySelector(".kstream-waiting");
    if (window.kstreamRunning !== null && window.kstreamShown === null && line && line.offsetParent !== null
        && line.textContent.trim()) {
      window.kstreamShown = now;
      window.kstreamStatus = line.textContent;
    }
  };
  new MutationObserver(check).observe(cell, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def _status_delay(page) -> float:
    """Seconds from the cell's [*] to its status line, as the page saw them."""
    return (page.evaluate("window.kstreamShown") - page.evaluate("window.kstreamRunning")) / 1000


def _shut_down(base: str, token: str, path: str) -> None:
    """End a notebook's kernel, so later steps see only the kernels they started."""
    sessions = json.loads(urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5).read())
    for session in sessions:
        if session["path"] == path:
            request = urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE")
            urllib.request.urlopen(request, timeout=10)


def _kernel_ready(base: str, token: str, path: str | None = None) -> bool:
    """The page runs nothing before its kernel is connected (cells run then stay `[ ]`); `path`:
    the kernel of that notebook (an earlier test's kernel may still be up)."""
    sessions = json.loads(urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5).read())
    return any(s["kernel"]["execution_state"] == "idle" and s["kernel"]["connections"]
               and path in (None, s["path"]) for s in sessions)


def _status(page) -> dict[str, str]:
    text = _cell(page, LIVE).locator(".kstream-status:visible").inner_text()
    pairs = (part.split(":", 1) for part in text.replace("\xa0", " ").split("·") if ":" in part)
    return {label.strip(): value.split()[0] for label, value in pairs}


def test_live_query_stop_interrupt_and_insert(lab, page):
    base, token, workdir = lab
    name = _notebook(workdir)
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.locator(".jp-Notebook:visible .jp-Cell").first.wait_for(timeout=60_000)
    _until(lambda: _kernel_ready(base, token), 60, "the notebook's kernel")
    time.sleep(1)  # the page connects to the kernel just after the server reports it
    for index in range(LIVE):
        _run(page, index, timeout=90)

    # A live query: the widget shows the rows, newest on top, and nothing from Spark's logs.
    page.evaluate(WATCH_SAVED_COPY)
    _cell(page, LIVE).evaluate(TIME_STATUS)
    _run(page, LIVE, wait=False)
    said = _until(lambda: page.evaluate("window.kstreamStatus"), 60, "the first query's status line")
    print(f"the first query's status line, {_status_delay(page):.2f} s after the cell began running: {said!r}")
    _cell(page, LIVE).scroll_into_view_if_needed()
    _shot(page, "first-query-status")
    _wait_done(page, LIVE)
    rows = _cell(page, LIVE).locator(".kstream-live:visible tbody tr")
    _until(lambda: rows.count() == 3, 120, "the first three rows")
    points = _cell(page, LIVE).locator(".kstream-chart:visible circle")
    _until(lambda: points.count() == 3, 10, "the chart's first three points")
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

    # Records from another process arrive while the cell is idle; rates are current.
    _run(page, FEED)
    _until(lambda: float(_status(page).get("rows/s", "0").replace(",", "")) > 0, 60, "a rows/s rate above zero")
    _until(lambda: float(_status(page).get("records in/s", "0").replace(",", "")) > 0, 30,
           "a records in/s rate above zero")
    drawn = [points.count()]

    def grown_to_40() -> bool:
        if points.count() != drawn[-1]:
            drawn.append(points.count())
        return int(_status(page)["rows"].replace(",", "")) >= 40

    _until(grown_to_40, 90, "rows from the other process")
    assert points.count() == 20  # the chart grew with the rows, to the 20 the widget holds
    assert drawn == sorted(drawn) and len(drawn) >= 3, drawn  # point by point as they came, never fewer
    _cell(page, LIVE).scroll_into_view_if_needed()
    _shot(page, "live")
    # newest on top: read the table in one step, as rows keep arriving while it is read
    shown = [int(text) for text in rows.evaluate_all("rs => rs.map(r => r.querySelectorAll('td')[1].innerText)")]
    assert shown[0] == max(shown), shown

    # Saved while it runs, the notebook keeps the current rows and status as HTML (the page shows
    # only the widget); reopened without the widget's kernel, that is what it shows.
    _saved_while_running(page, base, token, workdir, name)

    # Stop answers at once and the rates go away.
    started = time.monotonic()
    _cell(page, LIVE).get_by_role("button", name="Stop").click()
    _until(lambda: _status(page).get("state") == "STOPPED", 10, "STOPPED")
    assert time.monotonic() - started < 10
    assert _status(page)["rows/s"] == "–" and _status(page)["records in/s"] == "–"
    # the final state keeps the chart above the table, as the widget drew it
    final_points = _cell(page, LIVE).locator(".kstream-chart:visible circle")
    _until(lambda: final_points.count() == 20, 10, "the chart in the final state")
    # The saved notebook keeps the final state as HTML, not a widget that is gone with the kernel.
    # It takes the widget's place a moment after the status says STOPPED (the kernel's display
    # update): a save before it arrives keeps the widget, so save again until the file has it.
    def saved_final_state() -> bool:
        page.keyboard.press("Control+s")
        time.sleep(1)
        return _saved_final_state(workdir / name)

    _until(saved_final_state, 30, "the final state in the saved notebook")
    _shot(page, "stopped")

    # A waiting LIMIT query shows its columns and a status line saying what it waits for and reads,
    # its time ticking; Interrupt ends it: its Spark query ends, the broker lives on.
    _cell(page, WAIT_FOREVER).evaluate(TIME_STATUS)
    _run(page, WAIT_FOREVER, wait=False)
    said = _until(lambda: page.evaluate("window.kstreamStatus"), 30, "the waiting query's status line")
    delay = _status_delay(page)
    print(f"the waiting query's status line, {delay:.2f} s after the cell began running: {said!r}")
    assert delay < 1.0, f"the status line came {delay:.2f} s after the cell began running: {said!r}"
    waiting = _cell(page, WAIT_FOREVER).locator(".kstream-waiting:visible")
    _until(lambda: "waiting for" in waiting.inner_text(), 60, "the query to wait for records")  # the same line
    assert "reads topic clicks: all 1 partition from the earliest offsets" in waiting.inner_text()
    assert "Interrupt" in waiting.inner_text()
    headers = _cell(page, WAIT_FOREVER).locator(".kstream-live:visible th")
    assert [headers.nth(i).inner_text() for i in range(headers.count())] == ["K", "N"]
    assert _cell(page, WAIT_FOREVER).get_by_role("button", name="Stop").count() == 0  # Interrupt ends it
    status = _cell(page, WAIT_FOREVER).locator(".kstream-status:visible")
    first = status.inner_text()
    _until(lambda: status.inner_text() != first, 10, "the status line to tick")
    _until(lambda: "records read" in waiting.inner_text(), 60, "the records it read and filtered out")
    _cell(page, WAIT_FOREVER).scroll_into_view_if_needed()
    _shot(page, "waiting")
    time.sleep(2)
    page.keyboard.press("Escape")
    page.keyboard.press("i")
    page.keyboard.press("i")
    _wait_done(page, WAIT_FOREVER, 60)
    said = _cell(page, WAIT_FOREVER).locator(".jp-Cell-outputArea").inner_text().strip()
    assert said == "Query stopped.", said  # one line: no traceback, and the status line is gone
    _cell(page, WAIT_FOREVER).scroll_into_view_if_needed()
    _shot(page, "interrupted")
    _run(page, AFTER_INTERRUPT)
    assert "active spark queries: 0" in _cell(page, AFTER_INTERRUPT).inner_text()

    # The schema pane's Insert makes a %%kstream cell below, at once.
    _insert_from_schema_pane(page, "lab")


def _insert_from_schema_pane(page, frontend: str):
    _run(page, SCHEMA)  # running the last cell adds an empty one below it
    cells_before = page.locator(".jp-Notebook:visible .jp-Cell").count()
    insert = _cell(page, SCHEMA).get_by_role("button", name="Insert into a new cell")
    _until(lambda: insert.is_enabled(), 60, "the CREATE statement")
    insert.click()
    _until(lambda: page.locator(".jp-Notebook:visible .jp-Cell").count() == cells_before + 1, 10, "a new cell")
    editor = _cell(page, SCHEMA + 1).locator(".jp-InputArea-editor")
    _until(lambda: editor.inner_text().strip(), 10, "the statement in the new cell")  # filled just after
    _shot(page, f"{frontend}-inserted")
    inserted = editor.inner_text()
    assert inserted.startswith("%%kstream") and "CREATE STREAM CLICKS" in inserted
    copy = _cell(page, SCHEMA).get_by_role("button", name="Copy")
    copy.click()
    _until(lambda: "Copied" in _cell(page, SCHEMA).locator(".kstream-copy").inner_text(), 10, "Copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith("CREATE STREAM CLICKS")


def test_insert_in_notebook_7(lab, page):
    """Notebook 7 shares JupyterLab's cells: the pane's Insert works there too."""
    pytest.importorskip("notebook", minversion="7")
    base, token, workdir = lab
    name = _notebook(workdir, "notebook7.ipynb")
    page.goto(f"{base}/notebooks/{name}?token={token}")
    page.locator(".jp-Notebook:visible .jp-Cell").first.wait_for(timeout=60_000)
    _until(lambda: _kernel_ready(base, token), 60, "the notebook's kernel")
    time.sleep(1)
    for index in range(LIVE - 1):  # the stack and a topic with records
        _run(page, index, timeout=90)
    _insert_from_schema_pane(page, "notebook7")


LONG_SINK = "clicks_copy_enriched_for_the_reporting_team_dashboard_with_every_column_kept"


def test_persistent_query_card_counts_and_terminates(lab, page):
    """A CREATE STREAM AS SELECT cell shows its card at once; it counts the records written and
    its Terminate button ends the query."""
    base, token, workdir = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS[:LIVE] + [
        f"%%kstream\nCREATE STREAM {LONG_SINK} AS SELECT * FROM clicks;", "%kstream queries"]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, workdir / "cards.ipynb")
    page.goto(f"{base}/lab/tree/cards.ipynb?token={token}")
    page.locator(".jp-Notebook:visible .jp-Cell").first.wait_for(timeout=60_000)
    _until(lambda: _kernel_ready(base, token), 60, "the notebook's kernel")
    time.sleep(1)
    for index in range(LIVE):
        _run(page, index, timeout=90)
    _run(page, LIVE, timeout=180)
    card = _cell(page, LIVE).locator(".kstream-query-card")
    def written() -> int:
        found = re.search(r"records out: ([\d,]+)", card.inner_text().replace("\xa0", " "))
        return int(found.group(1).replace(",", "")) if found else 0

    _until(lambda: written() >= 3, 180, "three records written")
    assert f"CSAS_{LONG_SINK.upper()}_1" in card.inner_text() and "RUNNING" in card.inner_text()
    # The long sink name keeps to one line, cut with an ellipsis; hovering shows the whole name.
    name = card.locator(".kstream-sink b")
    assert name.get_attribute("title") == LONG_SINK.upper()
    assert name.evaluate("e => e.scrollWidth > e.clientWidth")  # cut, not wrapped
    line = card.locator(".kstream-sink").bounding_box()
    assert line["height"] < 2 * float(name.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 20"))
    _cell(page, LIVE).scroll_into_view_if_needed()
    _shot(page, "query-card")
    _cell(page, LIVE).get_by_role("button", name="Terminate").click()
    _until(lambda: "TERMINATED" in card.inner_text(), 60, "TERMINATED")
    assert _cell(page, LIVE).get_by_role("button", name="Terminate").is_disabled()
    _shot(page, "query-card-terminated")
    _run(page, LIVE + 1)
    assert "No persistent query is running." in _cell(page, LIVE + 1).inner_text()


LONG_ALIAS = "share_of_clicks_" + "x" * 108
#: the processing-log message of a division by zero in that column: 200 characters
LONG_MESSAGE = f"Error computing expression (N / (N - N)) for column {LONG_ALIAS.upper()} with index 0: / by zero"


def test_a_long_processing_log_message_is_shown_whole(lab, page):
    """A 200-character processing-log message is shown whole in the processing log's table: all its
    text, wrapped within the notebook's width, nothing cut."""
    assert len(LONG_MESSAGE) == 200
    base, token, workdir = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS[:LIVE] + [
        f"%%kstream\nSELECT n / (n - n) AS {LONG_ALIAS} FROM clicks;",
        "%%kstream\nSELECT MESSAGE FROM KSQL_PROCESSING_LOG;"]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, workdir / "log.ipynb")
    page.goto(f"{base}/lab/workspaces/log/tree/log.ipynb?token={token}")  # no earlier test's tabs
    page.locator(".jp-Notebook:visible .jp-Cell").first.wait_for(timeout=60_000)
    _until(lambda: _kernel_ready(base, token, "log.ipynb"), 120, "the notebook's kernel")
    time.sleep(1)
    for index in range(LIVE + 2):
        _run(page, index, timeout=180)
    cell = _cell(page, LIVE + 1)
    message = cell.locator("td", has_text="by zero").first
    message.wait_for(timeout=30_000)
    assert message.inner_text() == LONG_MESSAGE
    assert message.evaluate("e => e.scrollWidth <= e.clientWidth")  # nothing hidden inside the cell
    box, area = message.bounding_box(), cell.locator(".jp-OutputArea").bounding_box()
    assert box["x"] + box["width"] <= area["x"] + area["width"]  # wrapped within the notebook's width
    cell.scroll_into_view_if_needed()
    _shot(page, "processing-log-message")
    _shut_down(base, token, "log.ipynb")
