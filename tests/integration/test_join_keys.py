"""A join's key in the records persistent queries write (ksqlDB's rules): the synthetic ROWKEY of
a FULL OUTER join or an ON of two expressions, and an outer join's key column, never NULL where
the row has a key. Each sink topic is read back with confluent-kafka."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

T0 = 1_700_000_000_000


def int_key(n):
    return n.to_bytes(4, "big", signed=True)


def record(key, value, at=0):
    return {"key": key if isinstance(key, bytes) else int_key(key),
            "value": None if value is None else json.dumps(value), "timestamp": T0 + at}


def written(broker, topic, count):
    """The sink's first `count` records as (key bytes, value) in offset order."""
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=60,
                        until_end=False)
    return [(r["key"], None if r["value"] is None else json.loads(r["value"]))
            for r in sorted(got, key=lambda r: r["offset"])]


def settled(broker, topic, expected, timeout=60):
    """The sink table's latest value per record key, once it is `expected` (a changelog may hold
    a row's earlier versions, depending on how the changes fell into micro-batches)."""
    deadline = time.monotonic() + timeout
    while True:
        got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=None, timeout_s=3,
                            until_end=False)
        latest = {r["key"]: None if r["value"] is None else json.loads(r["value"])
                  for r in sorted(got, key=lambda r: r["offset"])}
        if latest == expected or time.monotonic() > deadline:
            return latest


@pytest.fixture
def joined(ksql):
    ksql.suffix = uuid.uuid4().hex[:8]
    return ksql


def test_table_joins_key_right_only_rows_by_the_right_tables_key(joined, broker):
    """FULL OUTER: the synthetic ROWKEY (first in SELECT *) is COALESCE(left key, right key);
    RIGHT: the left's key column carries the right's key on a right-only row."""
    sfx = joined.suffix
    users, scores = f"ku_{sfx}", f"ks_{sfx}"
    produce(broker.bootstrap_servers, users, [record(1, {"name": "ann"}), record(2, {"name": "bob"})],
            create_partitions=1)
    produce(broker.bootstrap_servers, scores, [record(1, {"score": 10}, 5), record(4, {"score": 40}, 5)],
            create_partitions=1)
    joined.sql(f"""CREATE TABLE users (id INT PRIMARY KEY, name STRING) WITH (kafka_topic='{users}', value_format='JSON');
                   CREATE TABLE scores (id INT PRIMARY KEY, score INT) WITH (kafka_topic='{scores}', value_format='JSON');""")
    with pytest.raises(ks.KStreamError) as missing:
        joined.sql("CREATE TABLE lost AS SELECT u.id, name, score FROM users u FULL OUTER JOIN scores s ON u.id = s.id;")
    assert "must include the join expression ROWKEY in its projection (eg, SELECT ROWKEY...)" in str(missing.value)
    full = joined.sql(f"CREATE TABLE full_{sfx} AS SELECT * FROM users u FULL OUTER JOIN scores s ON u.id = s.id;")
    right = joined.sql(f"CREATE TABLE right_{sfx} AS SELECT u.id, name, score FROM users u "
                       "RIGHT JOIN scores s ON u.id = s.id;")
    assert full.wait_for_records(3, 90) and right.wait_for_records(2, 90), (full.failure, right.failure)
    assert [(c.name, c.type.name) for c in joined.catalog.get(f"full_{sfx}").key_columns] == [("ROWKEY", "INT")]
    full_rows = {int_key(1): {"U_ID": 1, "U_NAME": "ann", "S_ID": 1, "S_SCORE": 10},
                 int_key(2): {"U_ID": 2, "U_NAME": "bob", "S_ID": None, "S_SCORE": None},
                 int_key(4): {"U_ID": None, "U_NAME": None, "S_ID": 4, "S_SCORE": 40}}
    assert settled(broker, f"FULL_{sfx.upper()}", full_rows) == full_rows
    right_rows = {int_key(1): {"NAME": "ann", "SCORE": 10}, int_key(4): {"NAME": None, "SCORE": 40}}
    assert settled(broker, f"RIGHT_{sfx.upper()}", right_rows) == right_rows


def test_expression_joins_key_by_the_join_expression(joined, broker):
    """Stream-stream ON ABS(l.a) = ABS(r.a): ROWKEY is ABS(...); stream-table ON UCASE(o.item) =
    i.item: the table's key column is the key, and an unmatched order is keyed by UCASE(o.item)."""
    sfx = joined.suffix
    left, right, orders, items = (f"{n}_{sfx}" for n in ("kl", "kr", "ko", "ki"))
    produce(broker.bootstrap_servers, left, [record(-3, {"b": 1}), record(5, {"b": 2})], create_partitions=1)
    produce(broker.bootstrap_servers, right, [record(3, {"c": 7}, 1)], create_partitions=1)
    produce(broker.bootstrap_servers, items, [record(b"TEA", {"price": 3})], create_partitions=1)
    produce(broker.bootstrap_servers, orders, [record(1, {"item": "tea", "qty": 2}, 10),
                                               record(2, {"item": "nut", "qty": 1}, 10)], create_partitions=1)
    joined.sql(f"""CREATE STREAM l (a INT KEY, b INT) WITH (kafka_topic='{left}', value_format='JSON');
                   CREATE STREAM r (a INT KEY, c INT) WITH (kafka_topic='{right}', value_format='JSON');
                   CREATE TABLE items (item STRING PRIMARY KEY, price INT) WITH (kafka_topic='{items}', value_format='JSON');
                   CREATE STREAM orders (id INT KEY, item STRING, qty INT)
                     WITH (kafka_topic='{orders}', value_format='JSON');""")
    streams = joined.sql(f"CREATE STREAM ss_{sfx} AS SELECT ROWKEY AS k, l.a AS la, b, c FROM l JOIN r "
                         "WITHIN 10 SECONDS ON ABS(l.a) = ABS(r.a);")
    lookups = joined.sql(f"CREATE STREAM st_{sfx} AS SELECT i.item AS item, o.id AS oid, qty, price FROM orders o "
                         "LEFT JOIN items i ON UCASE(o.item) = i.item;")
    assert streams.wait_for_records(1, 90), streams.failure
    assert lookups.wait_for_records(2, 90), lookups.failure
    assert written(broker, f"SS_{sfx.upper()}", 1) == [(int_key(3), {"LA": -3, "B": 1, "C": 7})]
    assert sorted(written(broker, f"ST_{sfx.upper()}", 2)) == [
        (b"NUT", {"OID": 2, "QTY": 1, "PRICE": None}), (b"TEA", {"OID": 1, "QTY": 2, "PRICE": 3})]


def test_a_chain_is_keyed_by_any_column_its_on_clauses_make_equivalent(joined, broker):
    """S1 LEFT JOIN T2 ON S1.ID = T2.ID LEFT JOIN T3 ON S1.ID = T3.ID: T2.ID keys the result (it is
    equivalent to S1.ID through the chain), also where T2 has no row; a query selecting none of
    S1.ID, T2.ID, T3.ID is refused naming them all, as ksqlDB does."""
    sfx = joined.suffix
    s1, t2, t3 = (f"{n}_{sfx}" for n in ("kc1", "kc2", "kc3"))
    produce(broker.bootstrap_servers, t2, [record(1, {"v0": 20})], create_partitions=1)
    produce(broker.bootstrap_servers, t3, [record(1, {"v0": 30}), record(2, {"v0": 31})], create_partitions=1)
    produce(broker.bootstrap_servers, s1, [record(n, {"v0": 10 + n}, 5) for n in (1, 2, 3)], create_partitions=1)
    joined.sql(f"""CREATE STREAM s1 (id INT KEY, v0 INT) WITH (kafka_topic='{s1}', value_format='JSON');
                   CREATE TABLE t2 (id INT PRIMARY KEY, v0 INT) WITH (kafka_topic='{t2}', value_format='JSON');
                   CREATE TABLE t3 (id INT PRIMARY KEY, v0 INT) WITH (kafka_topic='{t3}', value_format='JSON');""")
    with pytest.raises(ks.KStreamError) as missing:
        joined.sql("CREATE STREAM lost AS SELECT s1.v0, t2.v0 AS b FROM s1 JOIN t2 ON s1.id = t2.id "
                   "JOIN t3 ON t3.id = s1.id;")
    assert str(missing.value).endswith("\nThe query used to build `LOST` must include the join expressions S1.ID, "
                                       "T2.ID or T3.ID in its projection (eg, SELECT S1.ID...).")
    with pytest.raises(ks.KStreamError, match=r"The projection contains a key column \(`T2_ID`\) more than once, "
                                               "aliased as: K and T2_ID"):
        joined.sql("CREATE STREAM twice AS SELECT t2.id, t2.id AS k, s1.v0 FROM s1 JOIN t2 ON s1.id = t2.id "
                   "JOIN t3 ON s1.id = t3.id;")
    chain = joined.sql(f"CREATE STREAM chain_{sfx} AS SELECT t2.id, s1.v0 AS a, t2.v0 AS b, t3.v0 AS c FROM s1 "
                       "LEFT JOIN t2 ON s1.id = t2.id LEFT JOIN t3 ON s1.id = t3.id;")
    assert chain.wait_for_records(3, 90), chain.failure
    assert [(c.name, c.type.name) for c in joined.catalog.get(f"chain_{sfx}").key_columns] == [("T2_ID", "INT")]
    assert sorted(written(broker, f"CHAIN_{sfx.upper()}", 3)) == [
        (int_key(1), {"A": 11, "B": 20, "C": 30}), (int_key(2), {"A": 12, "B": None, "C": 31}),
        (int_key(3), {"A": 13, "B": None, "C": None})]
