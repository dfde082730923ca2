"""Materialize's list and map column types in writable tables: CREATE TABLE with `int list`,
`text list list` and `map[text=>int]` columns, INSERT of LIST[...] / MAP[...] and of their
text forms, read back by SELECT, a view, SUBSCRIBE and a JSON sink (a list as a JSON array,
a map as a JSON object), record by record."""

from __future__ import annotations

import json
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records

from mz_diffs import plain, rows_until

MZ = {"dialect": "materialize"}


def tag() -> str:
    return uuid.uuid4().hex[:8]


def python(value):
    """A value as plain Python: numpy arrays as lists, a map's (key, value) pairs as a dict."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return {k: python(v) for k, v in value}
    if isinstance(value, list):
        return [python(v) for v in value]
    if isinstance(value, dict):
        return {k: python(v) for k, v in value.items()}
    return value.item() if hasattr(value, "item") else value


def snapshot(session, query) -> list[tuple]:
    found = [tuple(python(v) for v in plain(r)) for r in session.sql(query, **MZ).itertuples(index=False)]
    return sorted(found, key=repr)


def table_of_collections(session) -> str:
    t = f"t_{tag()}"
    session.sql(f"CREATE TABLE {t} (id int, l int list, ll text list list, m map[text=>int]);"
                f"INSERT INTO {t} VALUES (1, LIST[1, 2], LIST[LIST['a'], LIST['b', 'c']], MAP['x' => 1, 'y' => 2]),"
                f"  (2, '{{3, NULL}}'::int list, '{{{{\"d e\"}}, {{}}}}'::text list list, '{{z=>3}}'::map[text=>int]),"
                f"  (3, NULL, NULL, NULL)", **MZ)
    return t


ROWS = [(1, [1, 2], [["a"], ["b", "c"]], {"x": 1, "y": 2}),
        (2, [3, None], [["d e"], []], {"z": 3}),
        (3, None, None, None)]


def test_list_and_map_columns_read_back_by_select_and_a_view(session):
    t = table_of_collections(session)
    assert snapshot(session, f"SELECT * FROM {t}") == sorted(ROWS, key=repr)
    session.sql(f"CREATE VIEW v_{t} AS SELECT id, l[1] AS first, m -> 'x' AS x FROM {t}", **MZ)
    assert snapshot(session, f"SELECT * FROM v_{t}") == sorted([(1, 1, 1), (2, 3, None), (3, None, None)], key=repr)


def test_lists_and_maps_as_text_as_materialize_writes_them(session):
    # an inner list is not quoted; a map is {k=>v,...} by key; elements quoted where they must be
    t = table_of_collections(session)
    assert snapshot(session, f"SELECT id, l::text AS l, ll::text AS ll, m::text AS m FROM {t}") == sorted([
        (1, "{1,2}", "{{a},{b,c}}", "{x=>1,y=>2}"), (2, "{3,NULL}", '{{"d e"},{}}', "{z=>3}"), (3, None, None, None)],
        key=repr)
    assert snapshot(session, "SELECT (MAP['b' => NULL, 'x y' => 'p=q', 'a' => ''])::text AS m") == [
        ('{a=>"",b=>NULL,"x y"=>"p=q"}',)]


def test_a_lists_and_a_maps_text_form_cast_in_a_query(session):
    t = table_of_collections(session)
    rows = snapshot(session, f"SELECT id, l = '{{1,2}}'::int list AS same, '{{{{1}},{{2,NULL}}}}'::int list list AS ll, "
                             f"'{{a=>\"x y\", b=>NULL}}'::map[text=>text] AS m FROM {t} WHERE id = 1")
    assert rows == [(1, True, [[1], [2, None]], {"a": "x y", "b": None})]
    with pytest.raises(ks.KStreamError, match=r'invalid input syntax for type integer list: invalid input '
                                                    r'syntax for type integer: invalid digit found in string: "x"'):
        session.sql("SELECT '{1,x}'::int list AS l", **MZ)


def test_a_querys_casts_name_custom_types(session):
    n = tag()
    session.sql(f"CREATE TYPE pt_{n} AS (x int, y int); CREATE TYPE ints_{n} AS LIST (ELEMENT TYPE = int);"
                f"CREATE VIEW v_{n} AS SELECT (ROW(5, 6)::pt_{n}).y AS y, '{{1,2}}'::ints_{n} AS l, "
                f"LIST[ROW(3, 4)]::pt_{n} list AS ps", **MZ)
    assert snapshot(session, f"SELECT * FROM v_{n}") == [(6, [1, 2], [{"x": 3, "y": 4}])]
    assert snapshot(session, f"SELECT (ROW(1, 2)::pt_{n})::text AS t") == [("(1,2)",)]
    with pytest.raises(ks.KStreamError, match=f'type "nope_{n}" does not exist'):
        session.sql(f"SELECT 1::nope_{n} AS z", **MZ)


def test_a_records_text_form_cast_in_a_query(session):
    n = tag()
    session.sql(f"CREATE TYPE pt_{n} AS (x int, y text)", **MZ)
    assert snapshot(session, f"SELECT ('(1,\"a b\")'::pt_{n}).y AS y, '(2,)'::pt_{n} AS p, "
                             f"'{{\"(3,c)\",NULL}}'::pt_{n} list AS ps") == [
        ("a b", {"x": 2, "y": None}, [{"x": 3, "y": "c"}, None])]
    with pytest.raises(ks.KStreamError, match=r'invalid input syntax for type .*: too few columns: "\(1\)"'):
        session.sql(f"SELECT '(1)'::pt_{n} AS p", **MZ)


def test_subscribe_shows_list_and_map_rows(session):
    t = table_of_collections(session)
    live = session.sql(f"SUBSCRIBE {t}", **MZ)
    try:
        got = rows_until(live, 3)
    finally:
        live.stop()
    assert sorted((tuple(python(v) for v in r[2:]) for r in got), key=repr) == sorted(ROWS, key=repr)
    assert {r[1] for r in got} == {1}


def test_a_json_sink_writes_a_list_as_an_array_and_a_map_as_an_object(session, broker):
    t = table_of_collections(session)
    topic = f"mzt-{tag()}"
    sink = session.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{topic}') "
                       "KEY (id) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert sink.wait_for_records(3, 120), sink.failure
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=3, timeout_s=60,
                            until_end=False)
    values = {json.loads(r["key"])["id"]: json.loads(r["value"]) for r in records}
    assert values == {
        1: {"id": 1, "l": [1, 2], "ll": [["a"], ["b", "c"]], "m": {"x": 1, "y": 2}},
        2: {"id": 2, "l": [3, None], "ll": [["d e"], []], "m": {"z": 3}},
        3: {"id": 3, "l": None, "ll": None, "m": None}}


def test_materialize_messages_for_list_and_map_values(session):
    t = f"t_{tag()}"
    session.sql(f"CREATE TABLE {t} (l int list, m map[text=>int])", **MZ)
    with pytest.raises(ks.KStreamError, match='column "l" is of type integer list but expression is of type '
                                              r'map\[text=>integer\]'):
        session.sql(f"INSERT INTO {t} (l) VALUES (MAP['a' => 1])", **MZ)
    with pytest.raises(ks.KStreamError, match='invalid input syntax for type integer list: invalid input '
                                              'syntax for type integer: "x": "{1,x}"'):
        session.sql(f"INSERT INTO {t} (l) VALUES ('{{1,x}}')", **MZ)
    with pytest.raises(ks.KStreamError, match="map key type must be text, got integer"):
        session.sql(f"CREATE TABLE bad_{t} (m map[int=>int])", **MZ)


def test_custom_types_in_a_table_read_back_by_select_and_a_json_sink(session, broker):
    k = tag()
    rec, ints, counts, t = f"rec_{k}", f"ints_{k}", f"counts_{k}", f"t_{k}"
    session.sql(f"CREATE TYPE {rec} AS (a int, b text); CREATE TYPE {ints} AS LIST (ELEMENT TYPE = int4);"
                f"CREATE TYPE {counts} AS MAP (KEY TYPE = text, VALUE TYPE = {ints});"
                f"CREATE TABLE {t} (id int, r {rec}, l {ints}, m {counts});"
                f"INSERT INTO {t} VALUES (1, ROW(1, 'x'), '{{1,2}}'::{ints}, '{{a=>{{1}}}}'),"
                f"  (2, '(2,)', LIST[3], MAP['b' => LIST[4, 5]])", **MZ)  # a record's text: b empty, so NULL
    shown = session.sql("SHOW TYPES", **MZ)
    assert {rec, ints, counts} <= set(shown["name"])
    found = session.sql(f"SELECT id, (r).a AS a, (r).b AS b, l, m FROM {t}", **MZ)
    got = sorted(tuple(python(v) for v in plain(r)) for r in found.itertuples(index=False))
    assert got == [(1, 1, "x", [1, 2], {"a": [1]}), (2, 2, None, [3], {"b": [4, 5]})]

    topic = f"mzt-{k}"
    sink = session.sql(f"CREATE SINK s_{t} FROM {t} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{topic}') "
                       "KEY (id) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT", **MZ)
    assert sink.wait_for_records(2, 120), sink.failure
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=2, timeout_s=60,
                            until_end=False)
    values = {json.loads(r["key"])["id"]: json.loads(r["value"]) for r in records}
    assert values == {1: {"id": 1, "r": {"a": 1, "b": "x"}, "l": [1, 2], "m": {"a": [1]}},
                      2: {"id": 2, "r": {"a": 2, "b": None}, "l": [3], "m": {"b": [4, 5]}}}

    with pytest.raises(ks.KStreamError, match=f'cannot drop type "materialize.public.{ints}": still depended upon '
                                              f'by type "materialize.public.{counts}"'):
        session.sql(f"DROP TYPE {ints}", **MZ)
    with pytest.raises(ks.KStreamError, match=f"still depended upon by table \"materialize.public.{t}\""):
        session.sql(f"DROP TYPE {rec}", **MZ)
    with pytest.raises(ks.KStreamError, match=f"catalog item '{t}' already exists"):
        session.sql(f"CREATE TYPE {t} AS (a int)", **MZ)
    with pytest.raises(ks.KStreamError, match='type "nope" does not exist'):
        session.sql(f"CREATE TABLE x_{k} (a nope)", **MZ)
    session.sql(f"DROP SINK s_{t}; DROP TABLE {t}; DROP TYPE {rec}; DROP TYPE {counts}; DROP TYPE {ints}", **MZ)
    assert not {rec, ints, counts} & set(session.sql("SHOW TYPES", **MZ)["name"])
    with pytest.raises(ks.KStreamError, match=f"unknown catalog item '{rec}'"):
        session.sql(f"DROP TYPE {rec}", **MZ)


def test_a_restart_brings_the_types_back_before_their_tables(broker, spark, tmp_path):
    service, state = f"mztyp{tag()}", str(tmp_path / "state")

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service, dialect="materialize")

    first = connect()
    first.sql("CREATE TYPE pair AS (a int, b text); CREATE TYPE gone AS LIST (ELEMENT TYPE = int);"
              "DROP TYPE gone; CREATE TABLE kept (p pair); INSERT INTO kept VALUES (ROW(1, 'x'))")
    first.stop()

    second = connect()
    assert set(second.sql("SHOW TYPES")["name"]) == {"pair"}
    found = second.sql("SELECT (p).a AS a, (p).b AS b FROM kept")
    assert [tuple(python(v) for v in plain(r)) for r in found.itertuples(index=False)] == [(1, "x")]
    second.stop()


def test_a_text_columns_text_form_is_read_at_run_time_and_malformed_text_fails_naming_the_record(session, broker):
    from kafkasql_magic.kafka.producer import produce

    n = tag()
    session.sql(f"CREATE TYPE pt_{n} AS (x int, y text)", **MZ)
    good, bad = f"tf_{n}", f"tfb_{n}"
    produce(broker.bootstrap_servers, good, [{"key": None, "value": json.dumps(v).encode(), "partition": 0}
                                             for v in ({"l": "{1,2}", "p": '(3,"a b")', "m": "{a=>1}"},
                                                       {"l": "{}", "p": "(4,)", "m": "{}"})], create_partitions=1)
    produce(broker.bootstrap_servers, bad, [{"key": None, "value": v.encode(), "partition": 0}
                                            for v in ("{5}", "{6,x}")], create_partitions=1)
    session.sql(f"CREATE SOURCE s_{good} FROM KAFKA TOPIC '{good}' FORMAT JSON", **MZ)
    assert snapshot(session, f"SELECT (data->>'l')::int list AS l, (data->>'p')::pt_{n} AS p, "
                             f"(data->>'m')::map[text=>int] AS m FROM s_{good}") == [
        ([1, 2], {"x": 3, "y": "a b"}, {"a": 1}), ([], {"x": 4, "y": None}, {})]
    session.sql(f"CREATE SOURCE s_{bad} FROM KAFKA TOPIC '{bad}' FORMAT TEXT", **MZ)
    with pytest.raises(ks.StatementError, match=r'invalid input syntax for type integer list: .*"x": "\{6,x\}" '
                                                rf"\(topic {bad}, partition 0, offset 1\)"):
        session.sql(f"SELECT text::int list AS l FROM s_{bad}", **MZ)
