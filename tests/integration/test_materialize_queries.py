"""The SQL a Materialize user writes over sources (issue 20, section 3): ORDER BY in snapshots,
PostgreSQL's functions over ksql's with Materialize's message for a missing one, and casts to
text in PostgreSQL's forms that keep their column's name."""

import json
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}


@pytest.fixture
def source(session, broker):
    topic = f"mzq_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [
        {"key": k.encode(), "value": json.dumps(v).encode(), "partition": 0, "headers": [("h", k.encode())]}
        for k, v in [("me", 3), ("you", 1), ("it", 2), ("us", None)]], create_partitions=1)
    session.sql(f"CREATE SOURCE q FROM KAFKA TOPIC '{topic}' KEY FORMAT BYTES VALUE FORMAT TEXT "
                "INCLUDE KEY, HEADERS, OFFSET", **MZ)
    return "q"


def test_order_by_before_limit(session, source):
    assert session.sql("SELECT text, \"offset\" FROM q ORDER BY text DESC LIMIT 2", **MZ).text.tolist() == [
        "null", "3"]
    assert session.sql("SELECT \"offset\" AS o, text FROM q ORDER BY 2, 1 DESC LIMIT 3", **MZ).o.tolist() == [1, 2, 0]
    assert session.sql("SELECT text FROM q ORDER BY length(key) DESC, \"offset\"", **MZ).text.tolist() == [
        "1", "3", "2", "null"]


def test_order_by_after_group_by_names_a_result_column(session, source):
    rows = session.sql("SELECT length(key) AS n, count(*) AS c FROM q GROUP BY length(key) ORDER BY c DESC, n",
                       **MZ)
    assert rows.values.tolist() == [[2, 3], [3, 1]]
    with pytest.raises(ks.StatementError, match="ORDER BY after GROUP BY must name a result column"):
        session.sql("SELECT length(key) AS n FROM q GROUP BY length(key) ORDER BY \"offset\"", **MZ)


def test_postgres_functions_and_text_casts(session, source):
    rows = session.sql("SELECT key::text, encode(key, 'hex') AS hex, octet_length(key), list_length(headers), "
                       "\"offset\"::text FROM q WHERE \"offset\" = 0", **MZ)
    assert list(rows.columns) == ["key", "hex", "octet_length", "list_length", "offset"]
    assert rows.values.tolist() == [["\\x6d65", "6d65", 2, 1, "0"]]


def test_the_map_operator(session, source):
    rows = session.sql("SELECT convert_from(map_build(headers) -> 'h', 'utf8') AS h, map_build(headers) -> 'x' AS x "
                       "FROM q ORDER BY \"offset\" LIMIT 2", **MZ)
    assert rows.to_dict("records") == [{"h": "me", "x": None}, {"h": "you", "x": None}]


def test_a_missing_function_in_materializes_words(session, source):
    with pytest.raises(ks.StatementError, match=r"^line 1:8: function no_such\(bytea, bigint\) does not exist\n"):
        session.sql("SELECT no_such(key, \"offset\") FROM q", **MZ)
    with pytest.raises(ks.StatementError, match="^line 1:8: Can't find any functions with the name 'NO_SUCH'\\n"):
        session.sql("SELECT no_such(key) FROM q;")


def test_subscribe_refuses_order_by(session, source):
    with pytest.raises(ks.StatementError, match="ORDER BY orders snapshot queries"):
        session.sql("SUBSCRIBE (SELECT text FROM q ORDER BY text)", **MZ)
