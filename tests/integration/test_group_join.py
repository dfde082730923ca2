"""GROUP BY, PARTITION BY and joins on a real broker, with header columns and pseudocolumns
in each (KLIP 50/57), and sources of both dialects joined together."""

import json
import time
import uuid
from collections import Counter, defaultdict

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.producer import produce

T0 = 1_700_000_000_000
ITEMS = {"apple": 3, "pear": 5, "plum": 7}
ORDERS = [  # (order id, partition, item, qty, region header or None)
    (1, 0, "apple", 2, b"eu"), (2, 1, "pear", 1, b"us"), (3, 0, "apple", 5, None),
    (4, 1, "plum", 4, b"eu"), (5, 0, "kiwi", 1, b"us"), (6, 1, "pear", 3, b"eu"),
]
BAD_ORDER_OFFSET = 3  # partition 0: offsets 0, 1, 2 are orders 1, 3, 5; then a bad value


@pytest.fixture(scope="module")
def shop(broker, spark):
    suffix = uuid.uuid4().hex[:8]
    topics = {name: f"{name}_{suffix}" for name in ("orders", "items", "payments")}
    produce(broker.bootstrap_servers, topics["items"], [
        {"key": item, "value": json.dumps({"price": price}), "timestamp": T0} for item, price in ITEMS.items()
    ] + [{"key": "broken", "value": "{oops", "timestamp": T0}], create_partitions=1)
    produce(broker.bootstrap_servers, topics["orders"], [
        {"key": oid.to_bytes(4, "big"), "value": json.dumps({"item": item, "qty": qty}), "partition": p,
         "timestamp": T0 + oid * 1000, "headers": [("region", region)] if region else []}
        for oid, p, item, qty, region in ORDERS
    ] + [{"key": (99).to_bytes(4, "big"), "value": "{not json", "partition": 0, "timestamp": T0}],
        create_partitions=2)
    produce(broker.bootstrap_servers, topics["payments"], [  # order 6 pays two hours late
        {"key": oid.to_bytes(4, "big"), "value": json.dumps({"amount": oid * 10}),
         "timestamp": T0 + oid * 1000 + (7_200_000 if oid == 6 else 500)} for oid in (1, 2, 4, 6)
    ], create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE STREAM orders (id INT KEY, item STRING, qty INT, region BYTES HEADER('region'))
          WITH (kafka_topic='{topics["orders"]}', value_format='JSON');
        CREATE TABLE items (item STRING PRIMARY KEY, price INT)
          WITH (kafka_topic='{topics["items"]}', value_format='JSON');
        CREATE STREAM payments (id INT KEY, amount INT)
          WITH (kafka_topic='{topics["payments"]}', value_format='JSON');""")
    s.topics = topics
    yield s
    s.stop()


def settle(handle, check, timeout=90):
    """Wait until `check(rows)` holds for a running push query's rows; then stop it."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            rows = handle.rows()
            if check(rows):
                return rows
            assert handle.failure is None, handle.failure
            time.sleep(0.3)
        raise AssertionError(f"rows never settled: {handle.rows().to_dict('records')}")
    finally:
        handle.stop()


def latest(rows, key):
    """A changelog's current state: the last row per key."""
    return {tuple(r[k] for k in key) if isinstance(key, tuple) else r[key]: r
            for r in rows.to_dict("records")}


# ---------------------------------------------------------------- GROUP BY
def test_group_by_counts_sums_and_tracks_offsets_per_key(shop):
    handle = shop.sql("SELECT item, COUNT(*) AS n, SUM(qty) AS total, MAX(ROWOFFSET) AS last_offset, "
                      "LATEST_BY_OFFSET(id) AS last_id FROM orders GROUP BY item EMIT CHANGES;")
    assert handle.names == ["ITEM", "N", "TOTAL", "LAST_OFFSET", "LAST_ID"]
    assert handle.plan.kind == "TABLE" and handle.plan.key_names == ["ITEM"]
    expected = {}
    offsets = defaultdict(int)
    for oid, p, item, qty, _ in ORDERS:
        n, total, _, _ = expected.get(item, (0, 0, 0, 0))
        expected[item] = (n + 1, total + qty, offsets[p], oid)
        offsets[p] += 1
    rows = settle(handle, lambda r: {k: (v["N"], v["TOTAL"], v["LAST_OFFSET"], v["LAST_ID"])
                                     for k, v in latest(r, "ITEM").items()} == expected)
    assert rows["TOTAL"].dtype.kind == "i"  # SUM of INT stays an integer, as in ksqlDB


def test_group_by_a_header_column_and_a_pseudocolumn(shop):
    handle = shop.sql("SELECT region, COUNT(*) AS n FROM orders GROUP BY region EMIT CHANGES;")
    by_region = settle(handle, lambda r: {k: v["N"] for k, v in latest(r, "REGION").items()}
                       == dict(Counter(o[4] for o in ORDERS if o[4] is not None)))
    assert None not in set(by_region["REGION"])  # ksqlDB drops a record whose group key is NULL, and logs it
    log = shop.processing_log(query=handle.id)
    assert ("Group-by column with index 0 resolved to null. The source row will be excluded from the table."
            in set(log.MESSAGE))
    settle(shop.sql("SELECT ROWPARTITION AS p, COUNT(*) AS n, COLLECT_LIST(ROWOFFSET) AS offsets "
                    "FROM orders GROUP BY ROWPARTITION EMIT CHANGES;"),
           lambda r: {k: (v["N"], sorted(v["OFFSETS"])) for k, v in latest(r, "P").items()} == {0: (3, [0, 1, 2]), 1: (3, [0, 1, 2])})


def test_group_by_expression_with_having_and_the_bad_record_logged(shop):
    handle = shop.sql("SELECT UCASE(item) AS item, AVG(qty) AS mean FROM orders WHERE qty > 1 "
                      "GROUP BY UCASE(item) HAVING COUNT(*) >= 2 EMIT CHANGES;")
    settle(handle, lambda r: {k: v["MEAN"] for k, v in latest(r, "ITEM").items()} == {"APPLE": 3.5})
    log = shop.processing_log(query=handle.id)
    assert list(log[["TOPIC", "PARTITION", "OFFSET"]].itertuples(index=False, name=None)) == [
        (shop.topics["orders"], 0, BAD_ORDER_OFFSET)]
    assert "JSON" in log.MESSAGE[0] or "json" in log.MESSAGE[0]


def test_tumbling_and_hopping_windows_group_by_rowtime(shop):
    handle = shop.sql("SELECT item, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS n, COLLECT_LIST(region) AS regions "
                      "FROM orders WINDOW TUMBLING (SIZE 2 SECONDS) GROUP BY item EMIT CHANGES;")
    assert handle.plan.key_names == ["ITEM", "WS", "WE"]
    expected = {("apple", 0): [b"eu"], ("apple", 2000): [None], ("pear", 2000): [b"us"], ("pear", 6000): [b"eu"],
                ("plum", 4000): [b"eu"], ("kiwi", 4000): [b"us"]}  # order 3 has no region: kept, as ksqlDB's COLLECT_LIST
    rows = settle(handle, lambda r: {(k[0], k[1] - T0): list(v["REGIONS"]) for k, v in
                                     latest(r, ("ITEM", "WS", "WE")).items()} == expected)
    assert set(rows.WE - rows.WS) == {2000} and set(rows.N) == {1}
    hopping = shop.sql("SELECT item, WINDOWSTART, COUNT(*) AS n FROM orders "
                       "WINDOW HOPPING (SIZE 4 SECONDS, ADVANCE BY 2 SECONDS) WHERE item = 'apple' "
                       "GROUP BY item EMIT CHANGES;")
    settle(hopping, lambda r: {k - T0: v["N"] for k, v in latest(r, "WINDOWSTART").items()}
           == {-2000: 1, 0: 2, 2000: 1})


@pytest.mark.parametrize("query,message", [
    ("SELECT * FROM orders WINDOW TUMBLING (SIZE 1 SECOND) EMIT CHANGES;", "A WINDOW clause needs GROUP BY"),
    ("SELECT * FROM orders WINDOW TUMBLING (SIZE 1 SECOND);",
     "Pull queries don't support WINDOW clauses."),
    ("SELECT item, qty, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;",
     "Non-aggregate SELECT expression(s) not part of GROUP BY: QTY"),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item HAVING qty > 1 EMIT CHANGES;",
     "Non-aggregate HAVING expression not part of GROUP BY: QTY\n"
     "Consider switching the HAVING clause to a WHERE clause before the GROUP BY."),
    # group-by.json: every offending SELECT expression, whole, also without GROUP BY in a CTAS
    ("SELECT item, qty * SUM(qty), UCASE(item), region FROM orders GROUP BY UCASE(item) EMIT CHANGES;",
     "Non-aggregate SELECT expression(s) not part of GROUP BY: ITEM, (QTY * SUM(QTY)), REGION\n"
     "Either add the column(s) to the GROUP BY or remove them from the SELECT."),
    ("CREATE TABLE ungrouped AS SELECT qty, COUNT() FROM orders;",
     "Non-aggregate SELECT expression(s) not part of GROUP BY: QTY\n"),
    # joins.json "stream stream left join - invalid join field - contains literal"
    ("CREATE STREAM literal_join AS SELECT * FROM orders o LEFT JOIN payments p WITHIN 1 SECONDS ON o.id = 0;",
     "Invalid comparison expression '0' in join '(O.ID = 0)'. Each side of the join comparision must contain "
     "references from exactly one source."),
    ("SELECT COUNT(*) FROM orders EMIT CHANGES;", "Use of aggregate function COUNT requires a GROUP BY clause."),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item;", "Pull queries don't support GROUP BY clauses."),
    ("SELECT * FROM orders PARTITION BY item;", "Pull queries don't support PARTITION BY clauses."),
    ("SELECT * FROM orders o JOIN items i ON o.item = i.item;", "Pull queries don't support JOIN clauses."),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item PARTITION BY item EMIT CHANGES;",
     "PARTITION BY and GROUP BY cannot be combined"),
    ("SELECT * FROM items PARTITION BY price EMIT CHANGES;", "Tables do not support PARTITION BY"),
    ("SELECT item FROM orders WHERE COUNT(*) > 1 GROUP BY item EMIT CHANGES;",
     "Aggregate function COUNT cannot be used here"),
    ("SELECT item, SUM(qty, 2) FROM orders GROUP BY item EMIT CHANGES;", "Function 'SUM' does not accept 2 argument(s)."),
    ("SELECT item FROM orders GROUP BY item EMIT CHANGES;",
     "GROUP BY requires aggregate functions in either the SELECT or HAVING clause."),
])
def test_aggregation_and_pull_query_messages(shop, query, message):
    with pytest.raises(StatementError) as info:
        shop.sql(query)
    assert message in str(info.value)


# ---------------------------------------------------------------- PARTITION BY
def test_partition_by_makes_the_expression_the_key(shop):
    rows = shop.sql("SELECT * FROM orders PARTITION BY item EMIT CHANGES LIMIT 6;")
    assert list(rows.columns) == ["ITEM", "QTY", "REGION", "ID"]  # the old key moves to the values
    assert sorted(rows.ID) == [o[0] for o in ORDERS]
    by_header = shop.sql("SELECT * FROM orders PARTITION BY region EMIT CHANGES LIMIT 6;")
    assert list(by_header.columns) == ["REGION", "ITEM", "QTY", "ID"]
    by_offset = shop.sql("SELECT ROWOFFSET AS o, id FROM orders PARTITION BY ROWOFFSET EMIT CHANGES LIMIT 6;")
    assert sorted(by_offset.O) == [0, 0, 1, 1, 2, 2]
    handle = shop.sql("SELECT id, item FROM orders PARTITION BY item EMIT CHANGES;")
    assert handle.plan.key_names == ["ITEM"]
    handle.stop()


# ---------------------------------------------------------------- joins
def test_stream_table_join_with_each_sides_pseudocolumns(shop):
    rows = shop.sql("SELECT o.id, o.item, i.price, o.qty * i.price AS cost, o.ROWOFFSET AS o_offset, "
                    "i.ROWOFFSET AS i_offset, o.region FROM orders o LEFT JOIN items i ON o.item = i.item "
                    "EMIT CHANGES LIMIT 6;")
    got = {r["ID"]: r for r in rows.to_dict("records")}
    item_offsets = {item: n for n, item in enumerate(ITEMS)}
    offsets = defaultdict(int)
    for oid, p, item, qty, region in ORDERS:
        r = got[oid]
        price = ITEMS.get(item)
        assert (r["O_ITEM"], r["PRICE"], r["COST"], r["O_OFFSET"], r["I_OFFSET"], r["REGION"]) == (
            item, price, qty * price if price else None, offsets[p], item_offsets.get(item), region), r
        offsets[p] += 1
    log = shop.processing_log()
    logged = set(log[log.QUERY == rows.attrs["query_id"]][["SOURCE", "TOPIC", "PARTITION", "OFFSET"]]
                 .itertuples(index=False, name=None))
    assert logged == {("ORDERS", shop.topics["orders"], 0, BAD_ORDER_OFFSET),
                      ("ITEMS", shop.topics["items"], 0, len(ITEMS))}  # each side's bad record, once
    inner = shop.sql("SELECT o.id FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES LIMIT 5;")
    assert sorted(inner.ID) == [1, 2, 3, 4, 6]  # kiwi has no price


def test_explain_shows_the_operator_tree(shop):
    joined = dict(shop.sql("EXPLAIN SELECT o.id, i.price FROM orders o LEFT JOIN items i ON o.item = i.item "
                           "EMIT CHANGES;").values)
    assert joined["Operators"].splitlines() == [
        "Project ID, PRICE",
        "└─ LookupJoin (the table as keyed state): LEFT JOIN ON (O.ITEM = I.ITEM)",
        f"   ├─ Scan STREAM ORDERS AS O: topic {shop.topics['orders']}, key KAFKA, value JSON",
        f"   └─ Scan TABLE ITEMS AS I: topic {shop.topics['items']}, key KAFKA, value JSON"]
    grouped = dict(shop.sql("EXPLAIN SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;").values)
    assert grouped["Operators"].splitlines()[0] == "Aggregate: GROUP BY ITEM computing COUNT(*); key ITEM"
    windowed = dict(shop.sql("EXPLAIN SELECT o.id FROM orders o JOIN payments p WITHIN (1 SECOND, 2 SECONDS) "
                             "ON o.id = p.id EMIT CHANGES;").values)
    assert windowed["Operators"].splitlines()[1] == (
        "└─ StreamStreamJoin (each side's records per join key): INNER JOIN WITHIN (1000 ms, 2000 ms) "
        "ON (O.ID = P.ID)")


def test_explain_shows_the_persistent_query_a_statement_would_start_and_creates_nothing(shop):
    # ksqlDB's EXPLAIN takes CREATE ... AS SELECT and INSERT INTO ... SELECT too
    shop.sql("SET 'cache.max.bytes.buffering'='0';")
    try:
        created = dict(shop.sql("EXPLAIN CREATE TABLE per_item AS SELECT item, COUNT(*) AS n FROM orders "
                                "GROUP BY item;").values)
    finally:
        shop.sql("UNSET 'cache.max.bytes.buffering';")
    assert created["Sink"] == "TABLE PER_ITEM (new)"
    assert created["Operators"].splitlines()[0] == (  # with the record cache off: a change per input record
        "RecordAggregate (a change per input record; groups as keyed state): GROUP BY ITEM computing COUNT(*); "
        "key ITEM")
    assert "PER_ITEM" not in {name.upper() for name in shop.sql("SHOW TABLES;")["Table Name"]}
    inserted = dict(shop.sql("EXPLAIN INSERT INTO orders SELECT * FROM orders WHERE qty > 1;").values)
    assert inserted["Sink"] == "INSERT INTO ORDERS" and inserted["Operators"].splitlines()[0].startswith("Project")


def test_select_star_over_a_join_prefixes_columns(shop):
    rows = shop.sql("SELECT * FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES LIMIT 1;")
    assert list(rows.columns) == ["O_ID", "O_ITEM", "O_QTY", "O_REGION", "I_ITEM", "I_PRICE"]
    with pytest.raises(StatementError, match="Column 'ITEM' is ambiguous. Could be I.ITEM or O.ITEM."):
        shop.sql("SELECT item FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;")


def test_stream_table_join_sees_table_updates_made_while_it_runs(shop, broker):
    topic = f"late_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [{"key": (1).to_bytes(4, "big"),
                                               "value": json.dumps({"item": "plum", "qty": 1})}],
            create_partitions=1)
    shop.sql(f"CREATE STREAM late_orders (id INT KEY, item STRING, qty INT) "
             f"WITH (kafka_topic='{topic}', value_format='JSON');")
    handle = shop.sql("SELECT o.id, i.price FROM late_orders o JOIN items i ON o.item = i.item EMIT CHANGES;")
    settle_first = time.monotonic() + 90
    while len(handle.rows()) < 1 and time.monotonic() < settle_first:
        time.sleep(0.3)
    produce(broker.bootstrap_servers, shop.topics["items"], [{"key": "plum", "value": json.dumps({"price": 70})}])
    produce(broker.bootstrap_servers, topic, [{"key": (2).to_bytes(4, "big"),
                                               "value": json.dumps({"item": "plum", "qty": 1})}])
    rows = settle(handle, lambda r: len(r) >= 2)
    assert rows.to_dict("records") == [{"ID": 1, "PRICE": 7}, {"ID": 2, "PRICE": 70}]
    produce(broker.bootstrap_servers, shop.topics["items"], [{"key": "plum", "value": json.dumps({"price": 7})}])


def test_a_null_join_key_is_logged_and_left_out_of_an_inner_join_but_kept_by_a_left_join(shop, broker):
    topic = f"nullkeys_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [
        {"key": (1).to_bytes(4, "big"), "value": json.dumps({"item": None, "qty": 1})},
        {"key": (2).to_bytes(4, "big"), "value": json.dumps({"item": "apple", "qty": 2})}], create_partitions=1)
    shop.sql(f"CREATE STREAM null_orders (id INT KEY, item STRING, qty INT) "
             f"WITH (kafka_topic='{topic}', value_format='JSON');")
    inner = shop.sql("SELECT o.id, i.price FROM null_orders o JOIN items i ON o.item = i.item EMIT CHANGES LIMIT 1;")
    assert inner.to_dict("records") == [{"ID": 2, "PRICE": 3}]
    log = shop.processing_log(query=inner.attrs["query_id"])
    log = log[log.SOURCE == "NULL_ORDERS"]  # the items table's own bad record is logged too
    assert log[["TOPIC", "PARTITION", "OFFSET", "MESSAGE"]].values.tolist() == [
        [topic, 0, 0, "Skipping record due to null join key or value."]]
    left = shop.sql("SELECT o.id, i.price FROM null_orders o LEFT JOIN items i ON o.item = i.item "
                    "EMIT CHANGES LIMIT 2;")
    assert {r.ID: None if pd.isna(r.PRICE) else r.PRICE for r in left.itertuples()} == {1: None, 2: 3}
    left_log = shop.processing_log(query=left.attrs["query_id"])
    assert (left_log.SOURCE != "NULL_ORDERS").all()


def test_stream_stream_join_within_a_window(shop):
    rows = shop.sql("SELECT o.id, p.amount, o.ROWOFFSET AS o_offset, p.ROWOFFSET AS p_offset, "
                    "p.ROWTIME - o.ROWTIME AS delay FROM orders o JOIN payments p WITHIN 1 HOUR ON o.id = p.id "
                    "EMIT CHANGES LIMIT 3;")
    assert sorted(map(tuple, rows[["O_ID", "AMOUNT", "P_OFFSET", "DELAY"]].values.tolist())) == [
        (1, 10, 0, 500), (2, 20, 1, 500), (4, 40, 2, 500)]  # order 6 paid outside the window


@pytest.mark.parametrize("query,message", [
    ("SELECT * FROM orders o JOIN payments p ON o.id = p.id EMIT CHANGES;",
     "Stream-Stream joins must have a WITHIN clause specified. None was provided."),
    ("SELECT * FROM orders o JOIN items i WITHIN 1 HOUR ON o.item = i.item EMIT CHANGES;",
     "A window definition was provided for a Stream-Table join. These joins are not windowed."),
    ("SELECT * FROM items i JOIN orders o ON o.item = i.item EMIT CHANGES;",
     "Invalid join order: table-stream joins are not supported; only stream-table joins. Got ITEMS INNER JOIN ORDERS."),
    ("SELECT * FROM orders o FULL JOIN items i ON o.item = i.item EMIT CHANGES;",
     "FULL OUTER joins between a stream and a table are not supported"),
    ("SELECT x.id FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;",
     "'X' is not a valid stream/table name or alias."),
])
def test_join_messages(shop, query, message):
    with pytest.raises(StatementError) as info:
        shop.sql(query)
    assert message in str(info.value)


def test_materialize_and_ksql_sources_join_and_aggregate(shop):
    shop.sql(f"""CREATE SOURCE prices FROM KAFKA TOPIC '{shop.topics["items"]}'
                   KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY, OFFSET ENVELOPE UPSERT;
                 CREATE SOURCE pays FROM KAFKA TOPIC '{shop.topics["payments"]}'
                   KEY FORMAT BYTES VALUE FORMAT TEXT INCLUDE KEY, PARTITION, OFFSET;""", dialect="materialize")
    handle = shop.sql('SUBSCRIBE (SELECT o.id, p.text AS price, p."offset" AS price_offset FROM orders o '
                      'JOIN prices p ON o.item = p.key)', dialect="materialize")
    got = settle(handle, lambda r: len(r) >= 5)
    prices = {oid: ITEMS[item] for oid, _, item, _, _ in ORDERS if item in ITEMS}
    assert {r["id"]: json.loads(r["price"])["price"] for r in got.to_dict("records")} == prices  # plum is back at 7
    snapshot = shop.sql("SELECT count(*) AS n, max(o.ROWOFFSET) AS last FROM orders o "
                        "JOIN pays p ON o.id = CAST(INT_FROM_BYTES(p.key) AS INT)", dialect="materialize")
    assert snapshot.to_dict("records") == [{"n": 4, "last": 2}]
