"""The magics, headless: a real IPython shell, broker and Spark; widgets clicked from code."""

import time
import uuid

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from kafkasql_magic.errors import KStreamError, QueryTimeout, SqlSyntaxError
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.runtime import PushQuery


@pytest.fixture(scope="module")
def shell(broker, spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "kafkasql_magic")
    ip.run_line_magic("config", f"KStreamMagics.bootstrap_servers = '{broker.bootstrap_servers}'")
    yield ip
    ip.run_line_magic("unload_ext", "kafkasql_magic")


@pytest.fixture
def stream(shell, broker):
    topic = f"m_{uuid.uuid4().hex[:8]}"
    name = topic.upper()
    produce(broker.bootstrap_servers, topic,
            [{"key": f"k{i}".encode(), "value": f'{{"n": {i}}}'.encode(), "headers": [("h", b"x")], "partition": 0}
             for i in range(3)], create_partitions=1)
    shell.run_cell_magic("kstream", "", f"SET 'auto.offset.reset'='earliest';\n"
                         f"CREATE STREAM {name} (k STRING KEY, n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    return name


def test_cell_binds_its_result_and_ignores_comments_on_the_magic_line(shell, stream):
    shell.run_cell_magic("kstream", "-o rows -- read three rows", f"SELECT k, n FROM {stream} EMIT CHANGES LIMIT 3;")
    rows = shell.user_ns["rows"]
    assert sorted(rows.N) == [0, 1, 2] and list(rows.columns) == ["K", "N"]


def test_line_magic_runs_one_statement_and_shows_its_result_as_the_widget_does(shell, stream):
    import pandas as pd

    shown = shell.run_line_magic("kstream", "SHOW STREAMS;")
    assert isinstance(shown, pd.DataFrame) and stream in set(shown["Stream Name"])  # still the DataFrame
    assert type(shown["Stream Name"].to_frame()) is pd.DataFrame  # what is computed from it is plain
    page = shown._repr_html_()
    count = f"{len(shown)} row{'' if len(shown) == 1 else 's'}</div>"
    assert 'class="kstream-result"' in page and count in page and "<th></th>" not in page  # no index


def test_sql_error_is_its_own_error_with_line_and_caret(shell):
    with pytest.raises(SqlSyntaxError) as info:
        shell.run_cell_magic("kstream", "", "SELECT a,\n  FROM s EMIT CHANGES;")
    assert "line 3:3" in str(info.value) and "^" in str(info.value)  # the %%kstream line is line 1


def test_push_query_returns_at_once_with_a_live_widget_and_stop_button(shell, stream, broker):
    from IPython.utils.capture import capture_output

    with capture_output() as shown:
        assert shell.run_cell_magic("kstream", "-o handle", f"SELECT * FROM {stream} EMIT CHANGES;") is None
        handle = shell.user_ns["handle"]  # shown by the magic, so that its final state can replace the widget
        assert isinstance(handle, PushQuery) and handle.is_active
        deadline = time.monotonic() + 60
        while handle.model.snapshot().rows_total < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert handle.model.snapshot().rows_total == 3
        # records read count from the batch that read them (its progress report), not a batch later
        while handle.model.snapshot().input_rows_total < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert handle.model.snapshot().input_rows_total == 3
        assert handle.model.snapshot().input_rows_per_second > 0
        assert "k2" in handle.view.table.value
        handle.view.button.click()
        assert handle.wait(60) and handle.state == "STOPPED"
    first, copy = shown.outputs[0].data, shown.outputs[1].data
    assert "application/vnd.jupyter.widget-view+json" in first and "text/plain" in first
    # beside the widget, its saved copy: what a notebook saved while the query runs keeps
    assert f"kstream-saved-{first['application/vnd.jupyter.widget-view+json']['model_id']}" in copy["text/html"]
    # what a saved notebook keeps once it ended: the final state as HTML, no widget, no copy
    final, emptied = shown.outputs[-2].data, shown.outputs[-1].data
    assert "application/vnd.jupyter.widget-view+json" not in final and "STOPPED" in final["text/html"]
    assert "k2" in final["text/html"] and emptied == {}


def test_a_chart_option_draws_the_live_rows_above_the_table_and_a_wrong_column_is_refused(shell, stream, spark):
    from IPython.utils.capture import capture_output

    with capture_output():
        shell.run_cell_magic("kstream", "-o charted --chart 'bar x=K y=N'", f"SELECT k, n FROM {stream} EMIT CHANGES;")
        handle = shell.user_ns["charted"]
        try:
            deadline = time.monotonic() + 60
            while handle.view.chart.value.count("<rect") < 3 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert handle.view.chart.value.count("<rect") == 3  # a bar per row, drawn as they came
            assert handle.view.widget.children.index(handle.view.chart) < \
                handle.view.widget.children.index(handle.view.table)
        finally:
            handle.stop()
    with pytest.raises(UsageError, match=r"no column 'price' in the result \(columns: K, N\)"):
        shell.run_cell_magic("kstream", "-o wrong --chart 'x=K y=price'", f"SELECT k, n FROM {stream} EMIT CHANGES;")
    assert "wrong" not in shell.user_ns
    assert spark.streams.active == []  # the refused chart's query was stopped


def test_spark_started_on_another_thread_is_the_active_session_where_it_is_used(spark):
    """Spark started in the background when the extension loads: the notebook's own code still
    finds it with SparkSession.getActiveSession() once a statement used it."""
    import threading

    from pyspark.sql import SparkSession

    from kafkasql_magic.sparkenv import local_spark

    seen = []

    def on_a_new_thread():
        seen.append(SparkSession.getActiveSession())
        local_spark()
        seen.append(SparkSession.getActiveSession())

    thread = threading.Thread(target=on_a_new_thread)
    thread.start()
    thread.join(120)
    assert seen[0] is None and seen[1] is not None  # none of its own before, Spark's session after


def test_help_shows_usage_with_examples(shell):
    doc = shell.find_cell_magic("kstream").__doc__
    assert "EMIT CHANGES" in doc and "--bootstrap-servers" in doc and "--max-rows N" in doc


@pytest.mark.parametrize("how", [("line", "--help"), ("line", ""), ("cell", "-h")])
def test_help_option_and_bare_line_magic_print_usage(shell, how):
    from IPython.utils.capture import capture_output

    with capture_output() as out:
        if how[0] == "line":
            assert shell.run_line_magic("kstream", how[1]) is None
        else:
            assert shell.run_cell_magic("kstream", how[1], "SHOW STREAMS;") is None
    assert "usage" in out.stdout.lower() and "--max-rows N" in out.stdout and "EMIT CHANGES" in out.stdout


def test_max_rows_option_on_the_line_magic_and_config_apply_to_the_next_statement(shell, stream):
    shell.run_line_magic("kstream", f"--max-rows 2 q << SELECT * FROM {stream} EMIT CHANGES;")
    q = shell.user_ns["q"]
    try:
        assert q.model.max_rows == 2
    finally:
        q.stop()
    shell.run_line_magic("config", "KStreamMagics.max_rows = 4")
    try:
        shell.run_cell_magic("kstream", "-o q", f"SELECT * FROM {stream} EMIT CHANGES;")
        q = shell.user_ns["q"]
        q.stop()
        assert q.model.max_rows == 4
    finally:
        shell.run_line_magic("config", "KStreamMagics.max_rows = 20")


def test_registry_option_applies_to_an_existing_session(shell, stream, broker):
    import kafkasql_magic.magic as magic

    shell.run_line_magic("kstream", "--registry http://127.0.0.1:1 SHOW STREAMS;")
    session = magic._sessions[broker.bootstrap_servers]
    assert session.schema_registry_url == "http://127.0.0.1:1"
    shell.run_line_magic("kstream", "SHOW STREAMS;")
    assert session.schema_registry_url != "http://127.0.0.1:1"


def test_kafka_config_reaches_the_clients_also_when_set_after_the_first_cell(shell, stream, broker):
    """`%config KStreamMagics.kafka_config` after the session exists: librdkafka properties reach
    the admin client and the executors' source options, registry ones the cell's registry;
    SHOW PROPERTIES masks the secret."""
    from kafkasql_magic import clientconf
    from kafkasql_magic.kafka import admin

    secret = "Magic-Secret-" + uuid.uuid4().hex[:8]
    registry = "http://127.0.0.1:1"
    shell.run_line_magic("kstream", "SHOW STREAMS;")  # the session exists before the setting
    shell.run_line_magic("config", "KStreamMagics.kafka_config = "
                                   f"{{'client.id': 'magic-cfg', 'basic.auth.user.info': 'u:{secret}'}}")
    try:
        shown = shell.run_line_magic("kstream", f"--registry {registry} SHOW PROPERTIES;")
        values = shown.set_index("Property")["Value"]
        assert values["client.id"] == "magic-cfg"
        assert values["schema.registry.basic.auth.user.info"] == "[hidden]" and secret not in repr(shown) + shown._repr_html_()
        assert admin.client_conf(broker.bootstrap_servers)["client.id"] == "magic-cfg"
        assert clientconf.source_options(broker.bootstrap_servers)["kafka.client.id"] == "magic-cfg"
        assert clientconf.registry_client_conf(registry, {})["basic.auth.user.info"] == f"u:{secret}"
        rows = shell.run_line_magic("kstream", f"SELECT n FROM {stream} EMIT CHANGES LIMIT 3;")
        assert sorted(rows.N) == [0, 1, 2]
    finally:
        shell.run_line_magic("config", "KStreamMagics.kafka_config = None")
        clientconf.forget(broker.bootstrap_servers, registry, ["client.id", "basic.auth.user.info"])


def test_running_a_cell_again_replaces_its_push_query(shell, stream):
    cell = f"%%kstream -o live_q\nSELECT * FROM {stream} EMIT CHANGES;"
    shell.run_cell(cell, cell_id="cell-a")
    first = shell.user_ns["live_q"]
    shell.run_cell(cell, cell_id="cell-a")
    second = shell.user_ns["live_q"]
    try:
        assert first is not second and not first.is_active and second.is_active
        shown = shell.run_line_magic("kstream", "SHOW QUERIES;")
        assert first.id not in set(shown.iloc[:, 0]) and second.id in set(shown.iloc[:, 0])
    finally:
        second.stop()


def test_terminate_matches_query_ids_case_insensitively(shell, stream):
    shell.run_cell_magic("kstream", "-o q", f"SELECT * FROM {stream} EMIT CHANGES;")
    q = shell.user_ns["q"]
    shell.run_line_magic("kstream", f"TERMINATE {q.id.lower()};")
    assert not q.is_active


def test_a_limit_query_shows_its_columns_and_status_at_once_while_the_cell_waits(shell, stream, monkeypatch):
    """Its view is on show within a second of the cell starting, before Spark prepared and started
    the query (seconds, even with Spark up); the query then fills in that same view."""
    import threading

    from IPython.utils.capture import capture_output

    from kafkasql_magic.live.feedback import CellFeedback

    real_starting = CellFeedback.query_starting

    def query_starting(self, model):
        real_starting(self, model)
        threading.Thread(target=watch, args=(self._shown,), daemon=True).start()

    said = set()  # what its status line said while the cell waited

    def watch(view):
        while not view.model.snapshot().terminal:
            said.add(view.status.value)
            time.sleep(0.1)

    monkeypatch.setattr(CellFeedback, "query_starting", query_starting)
    shown_after = []
    with capture_output() as out, pytest.raises(QueryTimeout):
        publisher = shell.display_pub
        publish = publisher.publish
        monkeypatch.setattr(publisher, "publish",
                            lambda data, *a, **k: (shown_after.append(time.monotonic() - started), publish(data, *a, **k)))
        started = time.monotonic()
        shell.run_cell_magic("kstream", "--timeout 4", f"SELECT k, n FROM {stream} WHERE n < 0 EMIT CHANGES LIMIT 5;")
    print(f"the status was shown {shown_after[0]:.3f} s after the cell started")
    assert shown_after[0] < 1.0
    waiting = out.outputs[0].data["text/plain"]
    assert "| K | N |" in waiting and "rows: 0" in waiting and "preparing the query…" in waiting
    assert "application/vnd.jupyter.widget-view+json" in out.outputs[0].data
    assert any(f"waiting for records… · reads topic {stream.lower()}: all 1 partition from the earliest offsets"
               " · Interrupt (■) stops the query" in value for value in said)  # the same widget, once the query started
    assert len(out.outputs) == 2 and out.outputs[-1].data == {}  # one display, cleared when the cell ends


def test_interrupting_a_limit_query_stops_its_spark_query(shell, stream, spark):
    import signal
    import sys
    import threading

    def waiting_for_rows() -> bool:  # the main thread blocks in PushQuery.result on a running query
        frame = sys._current_frames().get(threading.main_thread().ident)
        while frame is not None and frame.f_code is not PushQuery.result.__code__:
            frame = frame.f_back
        return frame is not None and bool(spark.streams.active)

    def interrupt_once_running():  # a real SIGINT, as Jupyter's Interrupt sends: it wakes the blocked wait
        deadline = time.monotonic() + 60
        while not waiting_for_rows() and time.monotonic() < deadline:
            time.sleep(0.2)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Thread(target=interrupt_once_running, daemon=True)
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt) as info:  # still one, so a script's Ctrl-C ends it as before
        shell.run_cell_magic("kstream", "--timeout 120", f"SELECT * FROM {stream} EMIT CHANGES LIMIT 1000;")
    timer.join()
    assert info.value._render_traceback_() == ["Query stopped."]  # what the notebook shows: no traceback
    assert time.monotonic() - started < 100  # the interrupt ended the wait, not the 120 s timeout
    assert spark.streams.active == []


def test_interrupting_a_query_while_spark_starts_it_stops_it_too(shell, stream, spark, monkeypatch, caplog):
    """Jupyter's Interrupt can land in a call to the JVM while Spark starts the query (the call cut,
    the JVM carrying on): still one line, no traceback logged by py4j, and the query it started
    anyway does not run on unseen."""
    import signal
    import threading

    from pyspark.sql.streaming import DataStreamWriter

    started = threading.Event()
    real_start = DataStreamWriter.start

    def slow_start(self, *args, **kwargs):
        query = real_start(self, *args, **kwargs)  # Spark started it; the call has not returned yet
        started.set()
        spark._jvm.java.lang.Thread.sleep(60_000)  # a JVM call the interrupt cuts
        return query

    def interrupt_once_started():
        started.wait(120)
        time.sleep(0.5)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    monkeypatch.setattr(DataStreamWriter, "start", slow_start)
    timer = threading.Thread(target=interrupt_once_started, daemon=True)
    timer.start()
    with pytest.raises(KeyboardInterrupt) as info:
        shell.run_cell_magic("kstream", "--timeout 120", f"SELECT * FROM {stream} EMIT CHANGES LIMIT 1000;")
    timer.join()
    assert info.value._render_traceback_() == ["Query stopped."]
    assert spark.streams.active == []
    assert "KeyboardInterrupt while sending command" not in caplog.text


def test_python_variables_assignment_and_file(shell, stream, tmp_path):
    shell.user_ns.update(wanted="k1", smallest=1)
    shell.run_cell_magic("kstream", "picked <<", f"SELECT k, n FROM {stream} WHERE k = {{wanted}} AND n >= :smallest "
                                                 "EMIT CHANGES LIMIT 1;")
    assert list(shell.user_ns["picked"].K) == ["k1"]
    script = tmp_path / "q.sql"
    script.write_text(f"SELECT k FROM {stream} WHERE n = 2 EMIT CHANGES LIMIT 1;")
    assert list(shell.run_line_magic("kstream", f"-f {script}").K) == ["k2"]
    with pytest.raises(KStreamError, match="No Python variable named 'nope' for :nope at line 2:"):
        shell.run_cell_magic("kstream", "", f"SELECT * FROM {stream} WHERE k = :nope;")


def test_default_formats_come_from_magic_config(shell, broker):
    import kafkasql_magic.magic as magic

    shell.run_line_magic("config", "KStreamMagics.default_value_format = 'DELIMITED'")
    magic._sessions.clear()
    try:
        topic = f"cfg_{uuid.uuid4().hex[:8]}"
        shell.run_cell_magic("kstream", "", f"CREATE STREAM CFG (a INT, b STRING) WITH (kafka_topic='{topic}', "
                                            "partitions=1);")
        described = shell.run_line_magic("kstream", "DESCRIBE cfg;")
        assert described.attrs["value_format"] == "DELIMITED"
    finally:
        shell.run_line_magic("config", "KStreamMagics.default_value_format = None")
        magic._sessions.clear()


def test_print_says_which_key_and_value_formats_it_detected(shell, stream):
    from IPython.utils.capture import capture_output

    topic = stream.lower()
    with capture_output() as out:
        shell.run_line_magic("kstream", f"PRINT '{topic}' FROM BEGINNING LIMIT 3;")
    assert "Key format: KAFKA_STRING" in out.stdout and "Value format: JSON" in out.stdout


def test_unknown_column_error_carries_a_caret_and_the_nearest_names(shell, stream):
    with pytest.raises(KStreamError) as info:
        shell.run_cell_magic("kstream", "", f"SELECT k,\n       nope FROM {stream};")
    *_, message, excerpt, caret = str(info.value).splitlines()
    assert "Line: 3, Col: 8: SELECT column 'NOPE' cannot be resolved." in message
    assert (excerpt, caret) == (f"       nope FROM {stream};", "       ^")
    with pytest.raises(KStreamError) as info:
        shell.run_cell_magic("kstream", "", f"SELECT kk FROM {stream};")
    assert info.value._render_traceback_()[-1] == "Did you mean K?"


def test_sql_on_the_cell_magic_line_is_refused(shell):
    with pytest.raises(UsageError, match="'SHOW' on the magic line is neither an option nor NAME <<"):
        shell.run_cell_magic("kstream", "SHOW STREAMS;", "SHOW TOPICS;")


def test_persistent_query_cell_returns_a_live_card_and_queries_lists_it(shell, stream, broker):
    from IPython.utils.capture import capture_output

    from kafkasql_magic.kafka.peek import fetch_records
    from kafkasql_magic.live.query_card import QueryCard

    sink = f"CARD_{stream}"
    with capture_output() as shown:
        assert shell.run_cell_magic("kstream", "-o q", f"CREATE STREAM {sink} AS SELECT * FROM {stream};") is None
        query = shell.user_ns["q"]
        assert query.wait_for_records(3, 120)
        shell.run_line_magic("kstream", "queries")
    card = shown.outputs[0].data
    assert "application/vnd.jupyter.widget-view+json" in card and card["text/plain"] == f"<query {query.id} RUNNING>"
    assert len(shown.outputs) == 2 and shown.outputs[1].data["text/plain"] == card["text/plain"]
    assert len(fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=3, timeout_s=30)) == 3
    ipython_cards = [w for w in _widgets() if isinstance(w, QueryCard) and w.model.state.query_id == query.id]
    deadline = time.monotonic() + 30
    while ipython_cards[0].model.state.records_out < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "records out: <b>3</b>" in ipython_cards[0].info.value and f'sink:&nbsp;<b title="{sink}"' in ipython_cards[0].info.value
    ipython_cards[0].terminate.click()  # TERMINATE through the session: every card of the query ends
    for c in ipython_cards:
        deadline = time.monotonic() + 30
        while c.model.state.status != "TERMINATED" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert c.model.state.status == "TERMINATED" and c.terminate.disabled
    shown_now = shell.run_line_magic("kstream", "SHOW QUERIES;")
    assert query.id not in set(shown_now["Query ID"])


def _widgets():
    """The objects the magic displayed are only referenced by their widgets: find them."""
    import gc

    return gc.get_objects()


def test_config_settings_apply_to_the_next_statement_of_an_existing_session(shell, stream, broker):
    """%config KStreamMagics.* changed after the cluster's session was made still applies (as JupySQL's do)."""
    import kafkasql_magic.magic as magic

    session = magic._sessions[broker.bootstrap_servers]
    settings = {"dialect": "'materialize'", "trigger_interval": "'3 seconds'", "timeout": "1.5",
                "schema_registry_url": "'http://127.0.0.1:1'"}
    try:
        for name, value in settings.items():
            shell.run_line_magic("config", f"KStreamMagics.{name} = {value}")
        shown = shell.run_line_magic("kstream", "SHOW SOURCES;")  # Materialize's listing, no --dialect
        assert list(shown.columns) == ["name", "type", "cluster"]
        assert session.schema_registry_url == "http://127.0.0.1:1"
        shell.run_cell_magic("kstream", "-o q", f"SELECT * FROM {stream};")  # a snapshot in Materialize
        assert len(shell.user_ns["q"]) == 3
        shell.run_line_magic("config", "KStreamMagics.dialect = 'ksql'")
        shell.run_cell_magic("kstream", "-o q", f"SELECT * FROM {stream} EMIT CHANGES;")
        q = shell.user_ns["q"]
        q.stop()
        assert q._trigger == "3 seconds"
        with pytest.raises(QueryTimeout, match=r"returned 0 of 1 rows within 1.5 seconds"):
            shell.run_cell_magic("kstream", "", f"SELECT * FROM {stream} WHERE n < 0 EMIT CHANGES LIMIT 1;")
    finally:
        for name, value in (("dialect", "'ksql'"), ("trigger_interval", "'0.5 seconds'"), ("timeout", "60.0"),
                            ("schema_registry_url", "None")):
            shell.run_line_magic("config", f"KStreamMagics.{name} = {value}")
