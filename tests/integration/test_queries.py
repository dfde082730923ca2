"""SQL over a real broker and a real Spark session: the Session API end to end."""

import json
import struct
import time
import uuid

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce


@pytest.fixture
def topic():
    return f"t_{uuid.uuid4().hex[:10]}"


def orders(broker, topic, partitions=2):
    records = [
        {"key": struct.pack(">i", i % 3), "value": json.dumps(
            {"item": f"item-{i}", "Qty": i, "price": i * 1.5, "tags": ["a", f"t{i}"], "addr": {"City": f"c{i}"}}),
         "headers": [("trace", f"tr-{i}".encode()), ("n", struct.pack(">i", 1000 + i)), ("trace", b"last")],
         "partition": i % partitions, "timestamp": 1_700_000_000_000 + i}
        for i in range(6)
    ]
    produce(broker.bootstrap_servers, topic, records, create_partitions=partitions)
    return records


CREATE_ORDERS = """
CREATE STREAM {name} (
  customer INT KEY, item STRING, qty INT, price DOUBLE, tags ARRAY<STRING>, addr STRUCT<city STRING>,
  trace BYTES HEADER('trace'), n BYTES HEADER('n')
) WITH (kafka_topic='{topic}', value_format='JSON');
"""


def test_push_query_with_limit_returns_typed_key_value_headers_and_pseudocolumns(session, broker, topic):
    produced = orders(broker, topic)
    session.sql(CREATE_ORDERS.format(name="orders", topic=topic))
    session.sql(f"CREATE STREAM orders_h (qty INT, hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    df = session.sql(
        "SELECT customer, item, qty, addr->city AS city, tags[2] AS tag, trace, "
        "ROWPARTITION AS p, ROWOFFSET AS o, ROWTIME AS rt FROM orders EMIT CHANGES LIMIT 6;"
    )
    assert list(df.columns) == ["CUSTOMER", "ITEM", "QTY", "CITY", "TAG", "TRACE", "P", "O", "RT"]
    headers = session.sql("SELECT qty, hs FROM orders_h EMIT CHANGES LIMIT 6;").sort_values("QTY")
    assert [[(h["KEY"], h["VALUE"]) for h in hs] for hs in headers.HS] == [r["headers"] for r in produced]
    df = df.sort_values("QTY").reset_index(drop=True)
    for i, row in df.iterrows():
        assert row.CUSTOMER == i % 3 and row.ITEM == f"item-{i}" and row.QTY == i  # JSON 'Qty' matched case-insensitively
        assert row.CITY == f"c{i}" and row.TAG == f"t{i}"
        assert row.TRACE == b"last"  # the last header with that key
        assert row.P == i % 2 and row.RT == 1_700_000_000_000 + i
    assert sorted(df[df.P == 0].O) == [0, 1, 2]


def test_select_star_excludes_pseudocolumns_and_keeps_header_columns(session, broker, topic):
    orders(broker, topic)
    session.sql(CREATE_ORDERS.format(name="star", topic=topic))
    df = session.sql("SELECT * FROM star EMIT CHANGES LIMIT 2;")
    assert list(df.columns) == ["CUSTOMER", "ITEM", "QTY", "PRICE", "TAGS", "ADDR", "TRACE", "N"]


def test_expressions_where_and_ksql_integer_division(session, broker, topic):
    orders(broker, topic)
    session.sql(CREATE_ORDERS.format(name="expr", topic=topic))
    df = session.sql("""
        SELECT qty, qty / 4 AS quarter, qty * price AS total,
               CASE WHEN qty > 3 THEN 'big' ELSE 'small' END AS size,
               CAST(qty AS STRING) AS qs, UCASE(item) AS up,
               INT_FROM_BYTES(n) AS n
        FROM expr
        WHERE item LIKE 'item-%' AND qty BETWEEN 1 AND 5 AND customer IN (1, 2) AND NOT qty = 3
        EMIT CHANGES LIMIT 4;""")
    df = df.sort_values("QTY").reset_index(drop=True)
    assert list(df.QTY) == [1, 2, 4, 5]  # qty 0 has customer 0, qty 3 is excluded by NOT
    assert list(df.QUARTER) == [0, 0, 1, 1]
    assert list(df.TOTAL) == [1.5, 6.0, 24.0, 37.5]
    assert list(df.SIZE) == ["small", "small", "big", "big"]
    assert list(df.QS) == ["1", "2", "4", "5"]
    assert list(df.N) == [1001, 1002, 1004, 1005]
    assert list(df.UP) == ["ITEM-1", "ITEM-2", "ITEM-4", "ITEM-5"]


def test_bad_records_go_to_the_processing_log_and_good_ones_are_kept(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", 1), "value": b'{"v": 1}', "partition": 0},
        {"key": b"\x01\x02", "value": b'{"v": 2}', "partition": 0},  # key: wrong KAFKA width
        {"key": struct.pack(">i", 3), "value": b'{"v": ', "partition": 0},  # value: invalid JSON
        {"key": struct.pack(">i", 4), "value": b'{"v": "four"}', "partition": 0},  # value: wrong type
        {"key": struct.pack(">i", 5), "value": b'{"v": 5}', "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE STREAM bad (k INT KEY, v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    df = session.sql("SELECT k, v FROM bad EMIT CHANGES LIMIT 2;")
    assert sorted(zip(df.K, df.V)) == [(1, 1), (5, 5)]
    log = session.processing_log(raw=True)
    log = log[log.TOPIC == topic].sort_values("OFFSET")
    assert list(log.OFFSET) == [1, 2, 3] and set(log.PARTITION) == {0}
    messages = list(log.MESSAGE)
    assert "IntegerDeserializer is not 4" in messages[0] and messages[0].startswith("Failed to deserialize key")
    assert "Invalid JSON" in messages[1]
    assert "requiredType: INTEGER, path: $.V" in messages[2]
    assert list(log.VALUE)[1] == b'{"v": '


def test_delimited_and_kafka_value_formats(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [
        {"value": b'1,"Smith, J",2.5', "partition": 0},
        {"value": b"2,Doe,", "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE STREAM csv (id INT, name STRING, score DOUBLE) "
                f"WITH (kafka_topic='{topic}', value_format='DELIMITED');")
    df = session.sql("SELECT * FROM csv;")  # pull query: a snapshot, no EMIT CHANGES
    assert df.fillna(-1).to_dict("records") == [{"ID": 1, "NAME": "Smith, J", "SCORE": 2.5},
                                                {"ID": 2, "NAME": "Doe", "SCORE": -1}]  # NULL: NaN in pandas
    other = topic + "_k"
    produce(broker.bootstrap_servers, other, [
        {"key": b"k1", "value": struct.pack(">d", 532.8738323), "partition": 0},
        {"key": b"k2", "value": struct.pack(">d", -0.5), "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE STREAM dbl (k STRING KEY, d DOUBLE) WITH (kafka_topic='{other}', value_format='KAFKA');")
    df = session.sql("SELECT k, d FROM dbl;")
    assert df.to_dict("records") == [{"K": "k1", "D": 532.8738323}, {"K": "k2", "D": -0.5}]


def test_unbounded_push_query_handle_streams_new_records_and_stops(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [{"value": b'{"n": 0}', "partition": 0}], create_partitions=1)
    session.sql(f"CREATE STREAM live (n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    handle = session.sql("SELECT n FROM live EMIT CHANGES;")
    assert handle.is_active
    produce(broker.bootstrap_servers, topic, [{"value": json.dumps({"n": i}), "partition": 0} for i in range(1, 4)]
            + [{"value": b"not json", "partition": 0}])
    deadline = time.monotonic() + 60
    while (len(handle.rows()) < 4 or not handle.model.snapshot().error_count) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sorted(handle.rows().N) == [0, 1, 2, 3]
    snap = handle.model.snapshot()
    assert snap.rows_total == 4 and snap.error_count == 1
    assert snap.latest_errors[0].startswith("partition 0, offset 4: ")  # the widget's error list says where
    handle.stop()
    assert not handle.is_active and handle.state == "STOPPED"


def test_a_micro_batchs_rows_come_in_record_time_order_not_partition_by_partition(session, broker, topic):
    """So the widget's newest row on top is the newest record, within a batch too; a partition's
    rows keep their offset order (a record written later with an older time stays after)."""
    times = {0: [(0, 1000), (1, 4000), (6, 500)], 1: [(2, 2000), (3, 5000)], 2: [(4, 3000), (5, 6000)]}
    produce(broker.bootstrap_servers, topic, [
        {"value": json.dumps({"n": n}), "partition": p, "timestamp": 1_700_000_000_000 + t}
        for p, records in times.items() for n, t in records], create_partitions=3)
    session.sql(f"CREATE STREAM timed (n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql("SELECT n FROM timed EMIT CHANGES LIMIT 7;")  # one micro-batch reads them all
    assert list(rows.N) == [0, 2, 4, 1, 6, 3, 5]


def test_table_push_query_keeps_latest_row_per_key_in_the_widget(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [
        {"key": b"a", "value": b'{"v": 1}', "partition": 0},
        {"key": b"b", "value": b'{"v": 2}', "partition": 0},
        {"key": b"a", "value": b'{"v": 3}', "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE TABLE tbl (k STRING PRIMARY KEY, v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    changelog = session.sql("SELECT * FROM tbl EMIT CHANGES LIMIT 3;")
    assert list(zip(changelog.K, changelog.V)) == [("a", 1), ("b", 2), ("a", 3)]
    handle = session.sql("SELECT * FROM tbl EMIT CHANGES;")
    deadline = time.monotonic() + 60
    while handle.model.snapshot().rows_total < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    handle.stop()
    assert sorted(handle.model.snapshot().rows) == [("a", 3), ("b", 2)]


def test_metadata_statements(session, broker, topic):
    orders(broker, topic)
    session.sql(CREATE_ORDERS.format(name="meta", topic=topic))
    described = session.sql("DESCRIBE meta;")
    assert described.to_dict("records")[0] == {"Field": "CUSTOMER", "Type": "INTEGER (key)"}
    assert {"Field": "TRACE", "Type": "BYTES (header('trace'))"} in described.to_dict("records")
    assert "ROWTIME" not in set(described.Field)
    streams = session.sql("SHOW STREAMS;")
    assert ("META", topic) in set(zip(streams["Stream Name"], streams["Kafka Topic"]))
    assert (topic, 2) in set(zip(*session.sql("SHOW TOPICS;").values.T))
    printed = session.sql(f"PRINT '{topic}' FROM BEGINNING LIMIT 6;")
    assert printed.attrs["key_format"] == "KAFKA_INT" and printed.attrs["value_format"] == "JSON"
    assert len(printed) == 6 and set(printed.key) == {"0", "1", "2"}
    session.sql("DROP STREAM meta;")
    with pytest.raises(ks.StatementError, match="META does not exist"):
        session.sql("DESCRIBE meta;")


def test_create_with_partitions_creates_the_topic_and_missing_topic_is_an_error(session, topic):
    with pytest.raises(ks.StatementError, match=f"Topic '{topic}' does not exist"):
        session.sql(f"CREATE STREAM nope (v STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    session.sql(f"CREATE STREAM made (v STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=3);")
    assert (topic, 3) in set(zip(*session.sql("SHOW TOPICS;").values.T))


def test_sql_errors_point_at_line_and_column(session):
    with pytest.raises(ks.SqlSyntaxError) as info:
        session.sql("SET 'auto.offset.reset'='earliest';\nSELECT a,\n  FROM s EMIT CHANGES;")
    assert (info.value.line, info.value.column) == (3, 3)
    assert "^" in str(info.value)
    with pytest.raises(ks.StatementError, match="SELECT column 'NOPE' cannot be resolved"):
        session.sql(f"CREATE STREAM e1 (v STRING) WITH (kafka_topic='{uuid.uuid4().hex}', value_format='JSON', "
                    "partitions=1); SELECT nope FROM e1 EMIT CHANGES LIMIT 1;")


def test_variables_and_byte_functions(session):
    session.sql("DEFINE tname = 'vars_topic';")
    session.sql("CREATE STREAM vars (v STRING) WITH (kafka_topic='${tname}', value_format='JSON', partitions=1);")
    assert session.catalog.get("VARS").topic == "vars_topic"
    with pytest.raises(ks.StatementError, match="Unknown byte order 'x'"):
        session.sql("SELECT INT_FROM_BYTES(TO_BYTES(v, 'hex'), 'x') FROM vars EMIT CHANGES LIMIT 1;")


def test_delimited_delimiters_multi_column_keys_and_wrapping(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [
        {"key": b"eu|7|true", "value": b"a\t1.5", "partition": 0},
        {"key": b"us|8|false", "value": b'"b\tc"\t2', "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE STREAM d (region STRING KEY, id INT KEY, vip BOOLEAN KEY, name STRING, score DECIMAL(4, 2)) "
                f"WITH (kafka_topic='{topic}', format='DELIMITED', key_delimiter='|', value_delimiter='TAB');")
    df = session.sql("SELECT * FROM d;")
    assert [tuple(r) for r in df.itertuples(index=False)][0][:4] == ("eu", 7, True, "a")
    assert df.NAME[1] == "b\tc" and str(df.SCORE[0]) == "1.50"
    other = topic + "_w"
    produce(broker.bootstrap_servers, other, [{"key": b"42", "value": b'"just a string"', "partition": 0},
                                              {"key": None, "value": b'"no key"', "partition": 0}],
            create_partitions=1)
    session.sql(f"CREATE STREAM w (k INT KEY, v STRING) WITH (kafka_topic='{other}', key_format='JSON', "
                "value_format='JSON', wrap_single_value=false);")
    rows = session.sql("SELECT k, v FROM w;")
    assert list(rows.V) == ["just a string", "no key"] and rows.K[0] == 42 and rows.K[1] is pd.NA


def test_null_key_on_a_table_is_dropped_and_logged(session, broker, topic):
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": b'{"v": 1}', "partition": 0},
                                              {"key": b"a", "value": b'{"v": 2}', "partition": 0}],
            create_partitions=1)
    session.sql(f"CREATE TABLE t (k STRING PRIMARY KEY, v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    assert session.sql("SELECT * FROM t EMIT CHANGES LIMIT 1;").to_dict("records") == [{"K": "a", "V": 2}]
    log = session.processing_log()
    assert list(log[log.TOPIC == topic].MESSAGE) == ["Record with a NULL key dropped from table"]


def test_dataframe_gives_the_planned_spark_frame(session, broker, topic):
    orders(broker, topic)
    session.sql(CREATE_ORDERS.format(name="frame", topic=topic))
    frame = session.dataframe("SELECT customer, qty * 2 AS double_qty FROM frame WHERE qty > 2;")
    assert frame.columns == ["CUSTOMER", "DOUBLE_QTY"] and not frame.isStreaming
    assert sorted(r.DOUBLE_QTY for r in frame.collect()) == [6, 8, 10]
    assert session.dataframe("SELECT item FROM frame EMIT CHANGES;").isStreaming
