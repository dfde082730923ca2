"""ksqlDB's lambda functions (TRANSFORM, FILTER, REDUCE over arrays and maps) computed by
Spark's higher-order functions on a real broker, in one bounded query."""

import json

from kafkasql_magic.kafka.producer import produce


def test_lambdas_over_arrays_and_maps_compute_as_ksqldb_documents(session, broker, new_topic):
    topic = new_topic()
    records = [
        {"id": 1, "arr": [1, 5, 10, None], "m": {"a": [2, None, 5], "bb": [-1, -2]}, "st": 3, "ds": [1.5, 2.5],
         "words": ["ya", "no", "yay"]},
        {"id": 2, "arr": None, "m": {"x": [1], "y": [1]}, "st": None, "ds": [], "words": None},
    ]
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps(r)} for r in records])
    session.sql(f"CREATE STREAM lam (id INT, arr ARRAY<INT>, m MAP<STRING, ARRAY<INT>>, st BIGINT, "
                f"ds ARRAY<DOUBLE>, words ARRAY<STRING>) WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql(
        "SELECT id, TRANSFORM(arr, x => x * 2) AS doubled, FILTER(arr, x => x > 4) AS big, "
        "REDUCE(arr, 0, (s, x) => s + IFNULL(x, 0)) AS total, REDUCE(arr, st, (s, x) => s + x) AS from_state, "
        "TRANSFORM(words, w => UCASE(w) + '!') AS shout, FILTER(words, w => INSTR(w, 'ya') > 0) AS ya, "
        "TRANSFORM(ds, d => d / 2) AS halves, "
        "TRANSFORM(m, (k, v) => UCASE(k), (k, v) => ARRAY_MAX(FILTER(v, z => z IS NOT NULL))) AS maxes, "
        "FILTER(m, (k, v) => LEN(k) > 1) AS long_keys, "
        "REDUCE(m, 0, (s, k, v) => s + ARRAY_LENGTH(v)) AS items, "
        "TRANSFORM(m, (k, v) => 'same', (k, v) => v) AS clash "
        "FROM lam;").sort_values("ID").to_dict("records")
    assert rows[0] == {
        "ID": 1, "DOUBLED": [2, 10, 20, None], "BIG": [5, 10], "TOTAL": 16, "FROM_STATE": None,
        "SHOUT": ["YA!", "NO!", "YAY!"], "YA": ["ya", "yay"], "HALVES": [0.75, 1.25],
        "MAXES": {"A": 5, "BB": -1}, "LONG_KEYS": {"bb": [-1, -2]}, "ITEMS": 5, "CLASH": None}
    # a NULL collection: TRANSFORM and FILTER give NULL, REDUCE its initial state (NULL here);
    # two entries given one key: NULL (and a processing-log entry), not a failed query
    assert rows[1] == {
        "ID": 2, "DOUBLED": None, "BIG": None, "TOTAL": 0, "FROM_STATE": None, "SHOUT": None, "YA": None,
        "HALVES": [], "MAXES": {"X": 1, "Y": 1}, "LONG_KEYS": {}, "ITEMS": 2, "CLASH": None}
    log = session.processing_log()
    assert (log.MESSAGE.str.contains("TRANSFORM's key function gave two entries the same key")).sum() >= 2
    grouped = session.sql("SELECT id, TRANSFORM(COLLECT_LIST(id), x => x * 10) AS tens FROM lam "
                          "GROUP BY id EMIT CHANGES LIMIT 2;")  # a lambda over an aggregate
    assert sorted(map(tuple, grouped[["ID", "TENS"]].to_numpy().tolist())) == [(1, [10]), (2, [20])]
