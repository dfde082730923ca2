"""Errors in the Materialize dialect are Materialize's (issue 20, section 5): a query over a bad
record fails naming it, the record goes to the processing log too, and a bad record never
deletes a good row; the ksqlDB dialect keeps logging and going on."""

import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}


def _topic(broker, records) -> str:
    name = f"mze_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, name, [{"partition": 0, **r} for r in records], create_partitions=1)
    return name


def _logged(session, topic) -> list[tuple[int, str]]:
    log = session.processing_log()
    return list(zip(log[log.TOPIC == topic].OFFSET, log[log.TOPIC == topic].MESSAGE))


def test_a_missing_included_header_fails_the_query(session, broker):
    topic = _topic(broker, [{"value": b"a", "headers": [("k", b"x")]}, {"value": b"b"}])
    session.sql(f"CREATE SOURCE mh FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE HEADER 'k' AS c", **MZ)
    with pytest.raises(ks.StatementError) as info:
        session.sql("SELECT * FROM mh", **MZ)
    assert str(info.value) == (f"A header with key 'k' was not found in the message headers "
                               f"(topic {topic}, partition 0, offset 1)")
    assert _logged(session, topic) == [(1, "A header with key 'k' was not found in the message headers")]


def test_a_text_header_that_is_not_utf8_fails_in_materializes_words(session, broker):
    topic = _topic(broker, [{"value": b"a", "headers": [("k", b"\xc3\x28")]}])
    session.sql(f"CREATE SOURCE bh FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE HEADER 'k' AS c", **MZ)
    with pytest.raises(ks.StatementError, match=r"^Found ill-formed byte sequence in header 'k' that cannot be "
                                                r"decoded as valid utf-8 \(original bytes: \[c3, 28\]\) \(topic"):
        session.sql("SELECT c FROM bh", **MZ)
    session.sql(f"CREATE SOURCE bh2 FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE HEADER 'k' AS c BYTES", **MZ)
    assert session.sql("SELECT c FROM bh2", **MZ).c.tolist() == [b"\xc3\x28"]


def test_envelope_none_key_without_value(session, broker):
    topic = _topic(broker, [{"key": b"a", "value": b"1"}, {"key": b"b", "value": None}])
    session.sql(f"CREATE SOURCE nv FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY", **MZ)
    with pytest.raises(ks.StatementError, match=r"^Envelope error: Flat: Value not present for message "
                                                r"\(topic .*, partition 0, offset 1\)$"):
        session.sql("SELECT * FROM nv", **MZ)


def test_upsert_null_key_fails_until_a_null_key_tombstone_retracts_it(session, broker):
    topic = _topic(broker, [{"key": b"a", "value": b"1"}, {"key": None, "value": b"9"}])
    session.sql(f"CREATE SOURCE un FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "ENVELOPE UPSERT", **MZ)
    with pytest.raises(ks.StatementError, match=r"^Envelope error: Upsert: Null key: record with NULL key in UPSERT source; to retract "
                       r"this error, produce a record upstream with a NULL key and NULL value \(topic .*offset 1\)$"):
        session.sql("SELECT * FROM un", **MZ)
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": None, "partition": 0},
                                              {"key": b"b", "value": b"2", "partition": 0}])
    assert session.sql("SELECT key, text FROM un ORDER BY key", **MZ).values.tolist() == [["a", "1"], ["b", "2"]]


def test_a_bad_record_never_deletes_a_good_row(session, broker):
    topic = _topic(broker, [{"key": b"a", "value": b"1", "headers": [("k", b"ok")]},
                            {"key": b"a", "value": b"2", "headers": [("k", b"\xff")]}])
    session.sql(f"CREATE SOURCE ug FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE HEADER 'k' AS h ENVELOPE UPSERT", **MZ)
    with pytest.raises(ks.StatementError, match="^Found ill-formed byte sequence in header 'k'"):
        session.sql("SELECT * FROM ug", **MZ)
    # ksql's log-and-continue: the key keeps its good row, the bad record is logged
    assert session.sql("SELECT * FROM ug;").to_dict("records") == [{"KEY": "a", "TEXT": "1", "H": "ok"}]
    assert [offset for offset, _ in _logged(session, topic)] == [1, 1]


def test_the_ksql_dialect_logs_and_goes_on(session, broker):
    topic = _topic(broker, [{"key": b"a", "value": b"1"}, {"key": b"b", "value": None}, {"key": b"c", "value": b"3"}])
    session.sql(f"CREATE SOURCE kn FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY", **MZ)
    rows = session.sql("SELECT * FROM kn;")
    assert rows.values.tolist() == [["a", "1"], ["c", "3"]]
    assert _logged(session, topic) == [(1, "Envelope error: Flat: Value not present for message")]
