"""Stream-stream LEFT, RIGHT and FULL joins with WITHIN and GRACE PERIOD on a real broker: a
record without a match comes out with NULLs once stream time (both inputs' largest record time)
has passed its window's end and the grace period."""

import time
import uuid

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.admin import create_topic
from kafkasql_magic.kafka.producer import produce

T0 = 1_700_000_040_000
ORDERS = [(1, 1_000), (2, 2_000), (3, 30_000)]  # (order id, ms after T0)
SHIPMENTS = [(1, 1_500), (9, 40_000)]  # order 1 ships within a second; order 9 has no order


@pytest.fixture(scope="module")
def shop(broker, spark):
    suffix = uuid.uuid4().hex[:8]
    for name, records in (("orders", ORDERS), ("shipments", SHIPMENTS)):
        create_topic(broker.bootstrap_servers, f"{name}_{suffix}", 1)
        produce(broker.bootstrap_servers, f"{name}_{suffix}", [
            {"key": oid.to_bytes(4, "big"), "value": f'{{"v": "{name[0]}{oid}"}}', "timestamp": T0 + ms}
            for oid, ms in records])
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=120)
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE STREAM orders (id INT KEY, v STRING) WITH (kafka_topic='orders_{suffix}', value_format='JSON');
        CREATE STREAM shipments (id INT KEY, v STRING) WITH (kafka_topic='shipments_{suffix}', value_format='JSON');""")
    yield s
    s.stop()


def as_set(rows) -> set:
    return {tuple(None if pd.isna(v) else v for v in r) for r in rows.itertuples(index=False)}


def joined(shop, kind: str, expected: set, timeout=150) -> set:
    handle = shop.sql(f"SELECT o.id AS oid, o.v AS ov, s.id AS sid, s.v AS sv FROM orders o {kind} JOIN shipments s "
                      f"WITHIN 1 SECOND GRACE PERIOD 0 SECONDS ON o.id = s.id EMIT CHANGES;")
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            rows = as_set(handle.rows())
            if rows >= expected:
                time.sleep(1)  # nothing more may come
                return as_set(handle.rows())
            time.sleep(0.5)
        return rows
    finally:
        handle.stop()


def test_left_join_emits_the_unmatched_orders_once_their_window_and_grace_passed(shop):
    # orders 2 (2 s) and 3 (30 s) have no shipment; stream time (both inputs' largest record
    # time, 40 s) has passed each one's window end (1 s after it) plus the grace (0 s), as Kafka
    # Streams' shared stream time has when shipment 9 comes
    rows = joined(shop, "LEFT", {(1, "o1", 1, "s1"), (2, "o2", None, None), (3, "o3", None, None)})
    assert rows == {(1, "o1", 1, "s1"), (2, "o2", None, None), (3, "o3", None, None)}


def test_full_join_emits_unmatched_rows_of_both_sides(shop):
    rows = joined(shop, "FULL OUTER", {(1, "o1", 1, "s1"), (2, "o2", None, None), (3, "o3", None, None)})
    # shipment 9 (40 s) still waits: its window ends at 41 s, stream time is 40 s
    assert rows == {(1, "o1", 1, "s1"), (2, "o2", None, None), (3, "o3", None, None)}


@pytest.mark.parametrize("text,message", [
    ("SELECT * FROM orders o LEFT JOIN shipments s ON o.id = s.id EMIT CHANGES;",
     "Stream-Stream joins must have a WITHIN clause specified."),
])
def test_ksqldb_messages(shop, text, message):
    with pytest.raises(ks.KStreamError, match=message):
        shop.sql(text)
