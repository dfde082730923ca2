"""Materialize's jsonb operators over a FORMAT JSON source on the real broker: `->` keeps a
member's JSON (a string quoted), `->>` gives text (a string unquoted, JSON null as NULL),
with PostgreSQL's NULLs for a missing member and a document of the wrong kind."""

from __future__ import annotations

import json

from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}

DOCUMENTS = [
    {"id": "7", "n": 3, "nested": {"x": "a b", "y": [1, 2]}, "tags": ["s", 1, None], "flag": True, "nil": None},
    {"id": 8, "n": "4", "nested": {"x": 5}},
    [1, 2],
    "text",
]


def test_arrows_over_json_documents_in_a_snapshot_and_a_subscribe(session, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": json.dumps(d)} for d in DOCUMENTS])
    session.sql(f"CREATE SOURCE docs FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE OFFSET", **MZ)
    rows = session.sql(
        "SELECT data->>'id' AS id, data->'nested'->>'x' AS x, (data->>'n')::int AS n, data->'nested' AS nested, "
        "data->'id' AS id_json, data->'tags'->0 AS first_tag, data->'tags'->>-1 AS last_tag, "
        "data->>'flag' AS flag, data->'nil' AS nil_json, data->>'nil' AS nil_text, data->'missing' AS missing, "
        "data->>1 AS second FROM docs ORDER BY \"offset\"", **MZ)
    assert rows.to_dict("records") == [
        {"id": "7", "x": "a b", "n": 3, "nested": '{"x":"a b","y":[1,2]}', "id_json": '"7"', "first_tag": '"s"',
         "last_tag": None, "flag": "true", "nil_json": "null", "nil_text": None, "missing": None, "second": None},
        {"id": "8", "x": "5", "n": 4, "nested": '{"x":5}', "id_json": "8", "first_tag": None,
         "last_tag": None, "flag": None, "nil_json": None, "nil_text": None, "missing": None, "second": None},
        {"id": None, "x": None, "n": None, "nested": None, "id_json": None, "first_tag": None,
         "last_tag": None, "flag": None, "nil_json": None, "nil_text": None, "missing": None, "second": "2"},
        {"id": None, "x": None, "n": None, "nested": None, "id_json": None, "first_tag": None,
         "last_tag": None, "flag": None, "nil_json": None, "nil_text": None, "missing": None, "second": None},
    ]
    live = session.sql("SUBSCRIBE (SELECT data->>'id' AS id, (data->>'n')::int + 1 AS m FROM docs "
                       "WHERE data->'nested'->>'x' = '5' LIMIT 1)", timeout=60, **MZ)
    assert live.drop(columns=["mz_timestamp"]).to_dict("records") == [{"mz_diff": 1, "id": "8", "m": 5}]


PATH_DOCUMENTS = [
    {"a": {"b": ["x", {"c": "deep"}, None], "k": 1}, "1": "one", "s": "str"},
    [[10, 20], {"1": "obj"}],
    "text",
]


def test_path_operators_over_json_documents(session, broker, new_topic):
    """`#>` / `#>>`: names and indexes (negative from the end) as the value at each step
    decides, the empty path, and NULL for a missing step, a step into a scalar or a NULL step."""
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": json.dumps(d)} for d in PATH_DOCUMENTS])
    session.sql(f"CREATE SOURCE path_docs FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE OFFSET", **MZ)
    rows = session.sql(
        "SELECT data #> '{a,b}' AS b, data #>> '{a,b,0}' AS first, data #>> '{a, b, 1, c}' AS deep, "
        "data #> '{a,b,-1}' AS last_json, data #>> '{a,b,-1}' AS last_text, data #> '{a,b,-2}' AS second_last, "
        "data #>> '{a,k}' AS k, data #>> '{1}' AS one, data #>> '{0,1}' AS twenty, data #>> '{1,1}' AS obj, "
        "data #> '{}' AS whole, data #>> '{}' AS whole_text, data #>> '{a,missing}' AS missing, "
        "data #>> '{s,x}' AS into_scalar, data #>> '{a,b,5}' AS past_end, data #>> '{a,NULL}' AS null_step, "
        "data -> 'a' #>> '{b,1,c}' AS after_arrow FROM path_docs ORDER BY \"offset\"", **MZ)
    absent = dict.fromkeys(["b", "first", "deep", "last_json", "last_text", "second_last", "k", "one", "twenty",
                            "obj", "missing", "into_scalar", "past_end", "null_step", "after_arrow"])
    assert rows.to_dict("records") == [
        {**absent, "b": '["x",{"c":"deep"},null]', "first": "x", "deep": "deep", "last_json": "null",
         "second_last": '{"c":"deep"}', "k": "1", "one": "one", "after_arrow": "deep",
         "whole": '{"1":"one","a":{"b":["x",{"c":"deep"},null],"k":1},"s":"str"}',
         "whole_text": '{"1":"one","a":{"b":["x",{"c":"deep"},null],"k":1},"s":"str"}'},
        {**absent, "one": '{"1":"obj"}', "twenty": "20", "obj": "obj",
         "whole": '[[10,20],{"1":"obj"}]', "whole_text": '[[10,20],{"1":"obj"}]'},
        {**absent, "whole": '"text"', "whole_text": "text"},
    ]


def test_a_json_document_is_shown_as_jsonb_canonical_text(session, broker, new_topic):
    """Materialize stores jsonb: `data` is the document's canonical text (no spaces, members in
    jsonb's key order, a repeated key's last value), whatever the record's own spelling."""
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": v} for v in (
        '{"c": "d",  "a": 1}', '{"b": 1, "aa": {"y": [1, 2.50], "x": null}}', '{"k": 1, "k": 2}', ' [1, "x"] ')])
    session.sql(f"CREATE SOURCE canon FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE OFFSET", **MZ)
    rows = session.sql("SELECT data, data->>'k' AS k FROM canon ORDER BY \"offset\"", **MZ)
    assert list(rows.data) == ['{"a":1,"c":"d"}', '{"aa":{"x":null,"y":[1,2.5]},"b":1}', '{"k":2}', '[1,"x"]']
    assert list(rows.k) == [None, None, "2", None]
