"""SchemaPane headless over a stub browser: listing, stale look-ups, errors, insert."""

from __future__ import annotations

import threading

from kafkasql_magic.errors import StatementError
from kafkasql_magic.live.schema_model import Listing, Part, SchemaBrowser, TopicEntry, TopicSchema
from kafkasql_magic.live.schema_pane import SchemaPane
from kafkasql_magic.registry.guess import guess
from kafkasql_magic.sql import ast


class StubBrowser:
    def __init__(self, gates=None):
        self.gates = gates or {}

    def load(self):
        return Listing((TopicEntry("alpha", None, "alpha-value"), TopicEntry("beta")), ("alpha-value",),
                       ("registry says hi",))

    def describe(self, topic):
        if topic in self.gates:
            self.gates[topic].wait(10)
        if topic == "boom":
            raise RuntimeError("kaboom")
        g = guess([{"key": b"k", "value": b'{"n": 1}'}])
        return TopicSchema(topic, topic.upper(), Part("key", "KAFKA", g.key_columns, "guess"),
                           Part("value", "JSON", g.value_columns, "guess"), g, g)


def test_listing_filter_and_messages():
    pane = SchemaPane(StubBrowser(), background=False)
    assert [v for _, v in pane.topics.options] == ["alpha", "beta"]
    assert "registry says hi" in pane.status.value and "2 of 2 topic(s), 1 subject(s)" in pane.status.value
    pane.filter.value = "ALPHA-VAL"
    assert [v for _, v in pane.topics.options] == ["alpha"]
    pane.select("beta")  # hidden by the filter: the filter is cleared
    assert pane.filter.value == "" and pane.topics.value == "beta"
    assert "GUESS" in pane.details.value and pane.statement.value.startswith("CREATE STREAM BETA (")
    assert pane.insert.disabled  # no on_insert


def test_filter_hiding_the_selection_does_not_select_another_topic():
    calls = []
    browser = StubBrowser()
    original = browser.describe
    browser.describe = lambda t: calls.append(t) or original(t)
    pane = SchemaPane(browser, background=False)
    pane.select("alpha")
    pane.filter.value = "beta"
    assert pane.topics.value is None and calls == ["alpha"]


def test_stale_lookups_are_dropped():
    gate = threading.Event()
    pane = SchemaPane(StubBrowser({"alpha": gate}), on_insert=lambda text: None)
    assert pane.wait(10)
    pane.select("alpha")  # blocked until the gate opens
    pane.select("beta")
    gate.set()
    assert pane.wait(10)
    assert "BETA" in pane.statement.value and pane.current.topic == "beta"
    assert not pane.insert.disabled


def test_describe_failure_is_shown():
    pane = SchemaPane(StubBrowser(), background=False)
    pane.listing = Listing((TopicEntry("boom"),))
    pane._show_listing()
    pane.select("boom")
    assert "kaboom" in pane.details.value


def test_browser_without_registry_or_broker():
    browser = SchemaBrowser(None, None)
    listing = browser.load()
    assert listing.entries == () and "No schema registry URL" in listing.messages[0]
    described = browser.describe("t")
    assert described.statement() == "" and "No schema registry URL" in described.messages[0]
    try:
        browser.subjects()
    except StatementError as exc:
        assert "No schema registry URL" in str(exc)
    else:
        raise AssertionError("subjects() without a registry must fail")


def test_topic_schema_text_and_error_statement():
    g = guess([{"key": None, "value": b'{"n": 1}'}])
    ts = TopicSchema("t", "T", Part("key", "NONE", [], "guess"), Part("value", "JSON", g.value_columns, "guess"),
                     g, g)
    assert "GUESS" in ts.to_text() and "N BIGINT" in ts.to_text()
    assert ts.statement("TABLE").startswith("-- Tables require a key format other than 'NONE'")
    assert ast.Type("BIGINT") == g.value_columns[0][1]
