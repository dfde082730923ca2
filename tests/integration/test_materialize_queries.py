"""The SQL a Materialize user writes over sources (issue 20, section 3): ORDER BY in snapshots,
PostgreSQL's functions over ksql's with Materialize's message for a missing one, casts to
text in PostgreSQL's forms that keep their column's name, GROUP BY a SELECT item's position or alias."""

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


def test_aggregates_in_the_order_their_order_by_gives(session, source):
    value = "CASE WHEN text = 'null' THEN NULL ELSE text END"
    rows = session.sql(f"SELECT list_agg(text ORDER BY text DESC), string_agg(convert_from(key, 'utf8'), ',' "
                       f"ORDER BY \"offset\" DESC) AS s, array_agg({value} ORDER BY {value} NULLS FIRST) AS a, "
                       "map_agg(length(key)::text, text ORDER BY \"offset\") AS last, "
                       "map_agg(length(key)::text, text ORDER BY \"offset\" DESC) AS first FROM q", **MZ)
    assert list(rows.columns) == ["list_agg", "s", "a", "last", "first"]
    got = rows.iloc[0]
    assert list(got.list_agg) == ["null", "3", "2", "1"] and got.s == "us,it,you,me"
    assert list(got.a) == [None, "1", "2", "3"]
    assert dict(got["last"]) == {"2": "null", "3": "1"} and dict(got["first"]) == {"2": "3", "3": "1"}
    grouped = session.sql("SELECT length(key) AS n, list_agg(text ORDER BY \"offset\" DESC) AS l FROM q "
                          "GROUP BY length(key) ORDER BY n", **MZ)
    assert [list(l) for l in grouped.l] == [["null", "2", "3"], ["1"]]
    with pytest.raises(ks.StatementError, match="Aggregate function LIST_AGG cannot be used here"):
        session.sql("SELECT text FROM q WHERE list_agg(text ORDER BY text) IS NULL", **MZ)


def test_group_by_a_select_items_position_or_alias(session, broker):
    topic = f"gb_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": v, "partition": 0} for v in (b"a", b"A", b"b")],
            create_partitions=1)
    session.sql(f"CREATE SOURCE {topic} FROM KAFKA TOPIC '{topic}' FORMAT TEXT", dialect="materialize")
    for by in ("1", "u"):
        rows = session.sql(f"SELECT upper(text) AS u, count(*) AS n FROM {topic} GROUP BY {by} ORDER BY u",
                           dialect="materialize")
        assert rows.values.tolist() == [["A", 2], ["B", 1]], by
