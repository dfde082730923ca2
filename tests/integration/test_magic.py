"""The magics, headless: a real IPython shell, broker and Spark; widgets clicked from code."""

import time
import uuid

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

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


def test_line_magic_runs_one_statement(shell, stream):
    shown = shell.run_line_magic("kstream", "SHOW STREAMS;")
    assert stream in set(shown["Stream Name"])


def test_sql_error_is_a_usage_error_with_line_and_caret(shell):
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("kstream", "", "SELECT a,\n  FROM s EMIT CHANGES;")
    assert "line 2:3" in str(info.value) and "^" in str(info.value)


def test_push_query_returns_at_once_with_a_live_widget_and_stop_button(shell, stream, broker):
    handle = shell.run_cell_magic("kstream", "", f"SELECT * FROM {stream} EMIT CHANGES;")
    assert isinstance(handle, PushQuery) and handle.is_active
    bundle, _ = shell.display_formatter.format(handle)
    assert "application/vnd.jupyter.widget-view+json" in bundle and "text/plain" in bundle
    deadline = time.monotonic() + 60
    while handle.model.snapshot().rows_total < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert handle.model.snapshot().rows_total == 3
    assert "k2" in handle._view.table.value
    handle._view.button.click()
    assert handle.wait(60) and handle.state == "STOPPED"


def test_help_shows_usage_with_examples(shell):
    doc = shell.find_cell_magic("kstream").__doc__
    assert "EMIT CHANGES" in doc and "--bootstrap-servers" in doc


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
