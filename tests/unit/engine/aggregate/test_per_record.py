"""When an aggregation writes one change per input record (ksqlDB's cache.max.bytes.buffering = 0)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.aggregate.per_record import cache_off, per_record
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.sql import parse_statement

SETTINGS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}
OFF = {"cache.max.bytes.buffering": "0"}


@pytest.mark.parametrize("settings,off", [
    ({}, False), (OFF, True), ({"ksql.streams.cache.max.bytes.buffering": "0"}, True),
    ({"cache.max.bytes.buffering": "10485760"}, False), ({"cache.max.bytes.buffering": " 0 "}, True),
    ({"cache.max.bytes.buffering": "zero"}, False)])
def test_cache_off(settings, off):
    assert cache_off(settings) is off


def plan_of(text: str):
    cat = Catalog()
    for create in ("CREATE STREAM orders (id INT KEY, item STRING, qty INT) WITH (kafka_topic='o', value_format='JSON');",
                   "CREATE TABLE items (item STRING PRIMARY KEY, price DOUBLE) WITH (kafka_topic='i', value_format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return analyse(parse_statement(text), cat, "ksql")


@pytest.mark.parametrize("text,applies", [
    ("SELECT item, COUNT(*), SUM(qty), AVG(qty), COLLECT_SET(qty) FROM orders GROUP BY item EMIT CHANGES;", True),
    ("SELECT item, LATEST_BY_OFFSET(qty) FROM orders GROUP BY item HAVING COUNT() > 1 EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY item EMIT CHANGES;", True),
    ("SELECT item, SUM(qty) FROM orders WINDOW HOPPING (SIZE 2 SECONDS, ADVANCE BY 1 SECOND) GROUP BY item "
     "EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY item EMIT FINAL;", False),
    ("SELECT item, COUNT(*) FROM orders WINDOW SESSION (1 SECOND) GROUP BY item EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders WINDOW SESSION (1 SECOND) GROUP BY item EMIT FINAL;", False),
    ("SELECT item, TOPK(qty, 2) FROM orders GROUP BY item EMIT CHANGES;", True),
    ("SELECT item, TOPK(qty, item, 2) FROM orders GROUP BY item EMIT CHANGES;", False),
    ("SELECT item, COUNT(*) FROM items GROUP BY item EMIT CHANGES;", True),  # a change per group change, retracting
    ("SELECT o.item, COUNT(*) FROM orders o JOIN items i ON o.item = i.item GROUP BY o.item EMIT CHANGES;", False),
])
def test_per_record_applies_to_stream_aggregations_with_accumulators(text, applies):
    plan = plan_of(text)
    assert per_record(plan, OFF) is applies
    assert per_record(plan, {}) is False


def test_an_aggregate_without_an_accumulator_keeps_the_per_batch_path():
    plan = plan_of("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;")
    call = plan.grouping.calls[0]
    in_order = replace(plan, grouping=replace(plan.grouping, calls=(replace(call, name="ARRAY_AGG"),)))
    assert per_record(plan, OFF) and not per_record(in_order, OFF)
