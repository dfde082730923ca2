"""ksqlDB's stream-table join with the table as keyed state (engine/lookup_join): each record
meets the table's row as it was at the record's time, and a restarted query meets the rows its
checkpoint holds without reading the table again."""

from __future__ import annotations

import json
import struct
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

from checkpoints import committed


def test_a_persistent_join_meets_the_table_of_each_records_time_and_keeps_it_across_a_restart(broker, spark,
                                                                                                tmp_path):
    import kafkasql_magic as ks

    suffix, bootstrap = uuid.uuid4().hex[:8], broker.bootstrap_servers
    orders, items, out = f"lo_{suffix}", f"li_{suffix}", f"LE_{suffix}".upper()

    def connect():
        session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=90, state_dir=str(tmp_path / "state"),
                             service_id=f"lj{suffix}")
        session.sql("SET 'auto.offset.reset'='earliest';")
        return session

    def order(i, at):
        return {"key": struct.pack(">i", i), "value": json.dumps({"ITEM": "apple"}), "timestamp": at}

    def price(p, at):
        return {"key": b"apple", "value": json.dumps({"PRICE": p}), "timestamp": at}

    produce(bootstrap, items, [price(1, 1000)], create_partitions=1)
    produce(bootstrap, orders, [order(1, 2000)], create_partitions=1)
    produce(bootstrap, items, [price(2, 2500)])  # read in the same micro-batch as both orders
    produce(bootstrap, orders, [order(2, 3000)])
    first = connect()
    query = first.sql(f"""CREATE TABLE items (item STRING PRIMARY KEY, price INT) WITH (kafka_topic='{items}', value_format='JSON');
        CREATE STREAM orders (id INT KEY, item STRING) WITH (kafka_topic='{orders}', value_format='JSON');
        CREATE STREAM {out} AS SELECT o.id, o.item, i.price FROM orders o JOIN items i ON o.item = i.item;""")
    assert query.wait_for_records(2, 120), query.failure
    committed(query)
    first.stop()

    produce(bootstrap, orders, [order(3, 4000)])  # the table's row comes from the checkpoint's state
    second = connect()
    try:
        resumed = second.persistent.queries[query.id]
        assert resumed.wait_for_records(1, 120), resumed.failure
        got = fetch_records(bootstrap, out, from_beginning=True, limit=3, timeout_s=30, until_end=False)
    finally:
        second.sql(f"TERMINATE {query.id};")
        second.stop()
    rows = [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in sorted(got, key=lambda r: r["offset"])]
    # keyed by the join key, as ksqlDB keys a stream-table join's result
    assert rows == [(b"apple", {"ID": 1, "PRICE": 1}, 2000), (b"apple", {"ID": 2, "PRICE": 2}, 3000),
                    (b"apple", {"ID": 3, "PRICE": 2}, 4000)]


def test_bigints_past_two_to_the_53_beside_nulls_come_through_exactly(ksql, broker):
    """pandas makes a BIGINT column holding a NULL a float column, which has 53 bits, and holds
    timestamps in nanoseconds, which end in 2262: the join carries such columns (the join key
    too) exactly, and its DOUBLEs as their text."""
    suffix, bootstrap = uuid.uuid4().hex[:8], broker.bootstrap_servers
    orders, accounts, out = f"lbo_{suffix}", f"lba_{suffix}", f"LBE_{suffix}".upper()
    big, last = 2**53 + 1, 253402300799999  # 9999-12-31T23:59:59.999
    produce(bootstrap, accounts, [{"key": struct.pack(">q", big), "value": json.dumps({"LIMIT": 2**62 + 3, "RATE": 0.1 + 0.2}),
                                   "timestamp": 1000},
                                  {"key": struct.pack(">q", big + 2), "value": json.dumps({"LIMIT": None}),
                                   "timestamp": 1000}],
            create_partitions=1)
    produce(bootstrap, orders, [{"key": b"o1", "value": json.dumps({"ACCOUNT": big, "AMOUNT": 2**60 + 7, "DUE": last,
                                                                     "PRICE": 5e-324}),
                                 "timestamp": 5000},
                                {"key": b"o2", "value": json.dumps({"ACCOUNT": big + 2, "AMOUNT": None}),
                                 "timestamp": 5000},
                                {"key": b"o3", "value": json.dumps({"ACCOUNT": None, "AMOUNT": big}),
                                 "timestamp": 5000}], create_partitions=1)
    query = ksql.sql(f"""CREATE TABLE accounts (id BIGINT PRIMARY KEY, `LIMIT` BIGINT, rate DOUBLE) WITH (kafka_topic='{accounts}', value_format='JSON');
        CREATE STREAM orders (k STRING KEY, account BIGINT, amount BIGINT, due TIMESTAMP, price DOUBLE) WITH (kafka_topic='{orders}', value_format='JSON');
        CREATE STREAM {out} AS SELECT o.account, o.k, o.amount, o.due, a.`LIMIT`,
          o.price, a.rate FROM orders o LEFT JOIN accounts a ON o.account = a.id;""")
    assert query.wait_for_records(3, 120), query.failure
    got = fetch_records(bootstrap, out, from_beginning=True, limit=3, timeout_s=30, until_end=False)
    values = sorted((json.loads(r["value"]) for r in got), key=lambda v: v["K"])
    assert values == [
        {"K": "o1", "AMOUNT": 2**60 + 7, "DUE": last, "LIMIT": 2**62 + 3, "PRICE": 5e-324, "RATE": 0.1 + 0.2},
        {"K": "o2", "AMOUNT": None, "DUE": None, "LIMIT": None, "PRICE": None, "RATE": None},
        {"K": "o3", "AMOUNT": big, "DUE": None, "LIMIT": None, "PRICE": None, "RATE": None}]
    assert sorted(r["key"] for r in got if r["key"] is not None) == sorted([struct.pack(">q", big),
                                                                             struct.pack(">q", big + 2)])
