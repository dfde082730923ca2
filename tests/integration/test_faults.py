"""Faults a careless user or a changing cluster brings: timeouts against a silent address,
counters over long runs, tombstones on streams, header keys that are not text."""

from __future__ import annotations

import json
import time

import pytest

import kafkasql_magic as ks
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.sql import parse_statement

SILENT = "127.0.0.1:1"  # nothing listens here


@pytest.fixture
def silent_session(spark):
    session = ks.connect(SILENT, spark=spark)
    text = "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');"
    session.catalog.add(ddl.source_from_create(parse_statement(text), dict(session.settings), text))
    yield session
    session.stop()


@pytest.mark.parametrize("statement", [
    "SELECT * FROM s;",
    "SELECT * FROM s EMIT CHANGES LIMIT 1;",
    "INSERT INTO s (id, v) VALUES (1, 'a');",
    "CREATE STREAM s2 (v STRING) WITH (kafka_topic='t2', value_format='JSON', partitions=1);",
])
def test_statements_keep_their_timeout_against_a_silent_address(silent_session, statement):
    started = time.monotonic()
    with pytest.raises(KafkaError) as info:
        silent_session.sql(statement, timeout=5)
    took = time.monotonic() - started
    assert took < 7, f"{statement} took {took:.1f}s with timeout=5"
    assert f"Kafka broker at {SILENT} did not answer" in str(info.value)


def test_a_mistake_in_a_query_is_reported_before_the_broker_is_asked(silent_session):
    """The statement's own error, with its caret, not the broker's silence (nor its wait)."""
    from kafkasql_magic.errors import StatementError

    started = time.monotonic()
    with pytest.raises(StatementError) as info:
        silent_session.sql("SELECT * FROM s WHERE v EMIT CHANGES;", timeout=5)
    assert "Type error in WHERE expression: Should evaluate to boolean but is V (STRING) instead." in str(info.value)
    assert not isinstance(info.value, KafkaError)
    assert time.monotonic() - started < 5, "the analysis waited for the broker"

def test_records_read_counts_more_batches_than_spark_keeps(session, spark, broker, new_topic):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"value": f'{{"v": "{i}"}}'.encode()} for i in range(60)])
    session.sql(f"CREATE STREAM many (v STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "3")
    per_trigger = session.max_records_per_trigger
    session.max_records_per_trigger = 6  # ten micro-batches
    try:
        rows = session.sql("SELECT v FROM many EMIT CHANGES LIMIT 60;")
    finally:
        session.max_records_per_trigger = per_trigger
        spark.conf.unset("spark.sql.streaming.numRecentProgressUpdates")
    assert len(rows) == 60
    assert rows.attrs["records_read"] == 60


@pytest.mark.parametrize("value_format, good", [("JSON", b'{"v": "a"}'), ("DELIMITED", b"a"), ("KAFKA", b"a")])
def test_a_stream_skips_tombstones_as_ksqldb_does(session, broker, new_topic, value_format, good):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [
        {"key": b"1", "value": good}, {"key": b"2", "value": None}, {"key": b"3", "value": good}])
    name = f"tomb_{value_format.lower()}"
    session.sql(f"CREATE STREAM {name} (k STRING KEY, v STRING) "
                f"WITH (kafka_topic='{topic}', key_format='KAFKA', value_format='{value_format}');")
    pushed = session.sql(f"SELECT k, v, ROWOFFSET AS o FROM {name} EMIT CHANGES LIMIT 2;")
    assert pushed.values.tolist() == [["1", "a", 0], ["3", "a", 2]]
    snapshot = session.sql(f"SELECT k, v FROM {name};")
    assert snapshot.values.tolist() == [["1", "a"], ["3", "a"]]
    assert session.processing_log().empty


def test_a_stream_without_value_columns_keeps_null_values(session, broker, new_topic):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": b"1", "value": None}, {"key": b"2", "value": b"x"}])
    session.sql(f"CREATE STREAM keys_only (k STRING KEY) WITH (kafka_topic='{topic}', value_format='KAFKA');")
    assert session.sql("SELECT k FROM keys_only;").values.tolist() == [["1"], ["2"]]


def test_header_keys_stay_text(session, broker, new_topic):
    topic = new_topic()
    with pytest.raises(KafkaError, match=r"Header key b'\\xff\\xfe' is not UTF-8 text \(byte 0\)"):
        produce(broker.bootstrap_servers, topic, [{"value": b"{}", "headers": [(b"\xff\xfe", b"x")]}])
    produce(broker.bootstrap_servers, topic, [{"value": b"{}", "headers": [("caf\u00e9".encode(), b"x")]}])
    session.sql(f"CREATE STREAM hk (hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql("SELECT hs FROM hk;")
    assert rows["HS"].tolist() == [[{"KEY": "caf\u00e9", "VALUE": b"x"}]]


def test_a_recreated_topic_stops_the_query_instead_of_skipping_records(session, broker, new_topic):
    from kafkasql_magic.kafka import admin

    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"value": f'{{"v": {i}}}'.encode()} for i in range(100)])
    session.sql(f"CREATE STREAM rc (v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = session.sql("SELECT v, ROWOFFSET AS o FROM rc EMIT CHANGES;")
    deadline = time.monotonic() + 90
    while len(query.rows()) < 100 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(query.rows()) == 100
    admin.delete_topic(broker.bootstrap_servers, topic)
    admin.create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [{"value": f'{{"v": {1000 + i}}}'.encode()} for i in range(300)])
    assert query.wait(60), f"{query} still runs on the re-created topic"
    assert query.state == "FAILED"
    # Whichever step saw it (the topic gone, its new id, its offsets gone back), one message:
    assert query.model.snapshot().message == (
        f"Topic '{topic}' was deleted or re-created while the query read it (partition 0 at offset 100): "
        "the topic's offsets started again, so reading on would skip or re-read records. The query "
        f"stopped; run it again to read the topic as it is now (bootstrap {broker.bootstrap_servers})")
    assert query.rows()["V"].max() < 1000, "rows of the new topic came in at the old offsets"


def test_a_header_key_that_is_not_utf8_is_logged_not_fatal(session, broker, new_topic):
    from raw_records import produce_with_header

    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"value": b'{"v": 1}', "headers": [("a", b"1")]}])
    produce_with_header(broker.bootstrap_servers, topic, b'{"v": 2}', b"\xff\xfe", b"x")
    produce(broker.bootstrap_servers, topic, [{"value": b'{"v": 3}', "headers": [("a", b"3")]}])
    session.sql(f"CREATE STREAM raw_hk (v INT, hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    session.sql(f"CREATE STREAM raw_plain (v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    with_headers = session.sql("SELECT v, hs FROM raw_hk;")
    assert with_headers["V"].tolist() == [1, 3]
    assert [[(h["KEY"], h["VALUE"]) for h in hs] for hs in with_headers["HS"]] == [[("a", b"1")], [("a", b"3")]]
    # headers not read (no header column, or none the query uses): every row
    assert session.sql("SELECT v FROM raw_plain;")["V"].tolist() == [1, 2, 3]
    assert session.sql("SELECT v FROM raw_hk;")["V"].tolist() == [1, 2, 3]
    log = session.processing_log(raw=True)
    assert log[["TOPIC", "PARTITION", "OFFSET", "MESSAGE"]].values.tolist() == [
        [topic, 0, 1, "Record headers could not be read: a header key is not UTF-8 text"]]
    assert log["VALUE"].tolist() == [b'{"v": 2}']


def test_a_persistent_query_resumed_on_a_recreated_topic_stops_and_says_what_to_do(ksql, broker, new_topic):
    """The running query stops when its input is re-created, retries from its checkpoint, and
    the checkpoint (made on the old topic) stops it with a message saying so; re-created as
    the message says, the query reads the new topic from its start."""
    from kafkasql_magic.kafka import admin, identity
    from kafkasql_magic.kafka.peek import fetch_records

    bs = broker.bootstrap_servers
    topic = new_topic()
    old_id = identity.describe(bs, topic).topic_id
    produce(bs, topic, [{"value": f'{{"v": {i}}}'.encode()} for i in range(100)])
    ksql.sql("SET 'ksql.query.retry.backoff.initial.ms'='500';")
    ksql.sql(f"CREATE STREAM rq (v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = ksql.sql("CREATE STREAM rq_out AS SELECT v FROM rq;")
    assert query.wait_for_records(100, 90), query.failure
    admin.delete_topic(bs, topic)
    admin.create_topic(bs, topic, 1)
    new_id = identity.describe(bs, topic).topic_id
    produce(bs, topic, [{"value": f'{{"v": {1000 + i}}}'.encode()} for i in range(300)])
    deadline = time.monotonic() + 90
    while "checkpoint was made" not in str(query.failure) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert query.restarts >= 1 and query.state == "ERROR"
    assert query.status().message == (
        f"Topic '{topic}' was re-created since this query's checkpoint was made (on topic id {old_id}; the id "
        f"is now {new_id}): resuming from the checkpoint's offsets (partition 0 at offset 100) would skip or "
        "re-read records, so the query stopped. To read the topic as it is now, create the query again "
        "(TERMINATE it, DROP the stream, table or sink it writes, run its CREATE statement again) or delete "
        f"its checkpoint directory, which EXPLAIN <query id> shows (bootstrap {bs})")
    ksql.sql(f"TERMINATE {query.id}; DROP STREAM rq_out;")
    again = ksql.sql("CREATE STREAM rq_out AS SELECT v FROM rq;")
    assert again.wait_for_records(300, 90), again.failure
    written = [json.loads(r["value"])["V"] for r in fetch_records(bs, "RQ_OUT", from_beginning=True, limit=None,
                                                                  timeout_s=2, until_end=True)]
    assert sorted(written) == list(range(100)) + list(range(1000, 1300)), "a record was lost or read twice"
    ksql.sql(f"TERMINATE {again.id};")
