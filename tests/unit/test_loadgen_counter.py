"""Materialize's LOAD GENERATOR COUNTER as rules: its options, the values due at a time, its
catalog entry (no Spark)."""

from __future__ import annotations

import struct

import pytest

from kafkasql_magic.errors import SqlSyntaxError, StatementError
from kafkasql_magic.loadgen.counter import Counter, counter_of, define, interval_us
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.sql.ast_materialize import CreateLoadGenerator


def parsed(text: str) -> CreateLoadGenerator:
    return parse_statement(text, dialect="materialize")


@pytest.mark.parametrize("text, micros", [
    ("1s", 1_000_000), ("500ms", 500_000), ("10 ms", 10_000), ("1 second", 1_000_000), ("2", 2_000_000),
    ("1m 30s", 90_000_000), ("0.5s", 500_000), ("00:00:01.5", 1_500_000), ("1 hour", 3_600_000_000),
    ("250 microseconds", 250),
])
def test_tick_interval_as_postgres_reads_intervals(text, micros):
    assert interval_us(text) == micros


@pytest.mark.parametrize("text", ["", "fast", "1 fortnight", "1s x"])
def test_an_interval_that_is_not_one_is_refused_in_postgres_words(text):
    with pytest.raises(StatementError, match=f'invalid input syntax for type interval: "{text}"'):
        interval_us(text)


def test_values_fall_due_one_per_tick_from_the_epoch_up_to_the_end():
    counter = Counter(tick_us=1_000, epoch_us=10_000, up_to=5)
    assert [counter.due(t) for t in (9_999, 10_000, 10_999, 11_000, 13_500, 99_000)] == [0, 1, 1, 2, 4, 5]
    assert counter.record(0) == (struct.pack(">q", 1), 10_000)
    assert counter.record(3) == (struct.pack(">q", 4), 13_000)
    assert counter.watermarks(12_000) == {0: (0, 3)}
    assert Counter.of_options(counter.options()) == counter
    assert Counter(1_000, 0).due(5_000_000) == 5_001  # no UP TO: no end


def test_a_counter_source_is_one_bigint_column_counter_with_no_topic_read():
    source = define(parsed("CREATE SOURCE c FROM LOAD GENERATOR COUNTER (TICK INTERVAL '10ms', UP TO 3)"), 7)
    assert [(c.name, c.type.name) for c in source.columns] == [("counter", "BIGINT")]
    assert counter_of(source) == Counter(10_000, 7, 3)
    assert (source.kind, source.dialect, source.key_format.name, source.value_format.name) == (
        "STREAM", "materialize", "NONE", "KAFKA")
    assert counter_of(define(parsed("CREATE SOURCE c FROM LOAD GENERATOR COUNTER"), 0)).tick_us == 1_000_000


@pytest.mark.parametrize("text, message", [
    ("CREATE SOURCE a FROM LOAD GENERATOR AUCTION", "LOAD GENERATOR AUCTION is not supported here"),
    ("CREATE SOURCE a FROM LOAD GENERATOR wobble", "unknown load generator WOBBLE: expected one of AUCTION"),
    ("CREATE SOURCE a FROM LOAD GENERATOR COUNTER (TICK INTERVAL '0s')", "TICK INTERVAL must be greater than zero"),
    ("CREATE SOURCE a FROM LOAD GENERATOR COUNTER (TICK INTERVAL 'soon')", "invalid input syntax for type interval"),
])
def test_what_is_refused_at_create(text, message):
    with pytest.raises(StatementError, match=message):
        define(parsed(text), 0)


def test_an_option_given_twice_is_refused_where_it_is():
    with pytest.raises(SqlSyntaxError, match="line 1:55: UP TO specified more than once"):
        parsed("CREATE SOURCE c FROM LOAD GENERATOR COUNTER (UP TO 5, UP TO 3)")


def test_the_generator_words_stay_column_names():
    stmt = parsed("SELECT counter, load, generator, tick, interval, up FROM c")
    assert [i.expr.name for i in stmt.items] == ["counter", "load", "generator", "tick", "interval", "up"]
