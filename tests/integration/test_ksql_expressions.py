"""ksqlDB's constructors, `+` on strings and multi-key GROUP BY with a partly NULL key, computed
by Spark on a real broker."""

import json
import time

from kafkasql_magic.kafka.producer import produce


def test_constructors_and_string_plus_compute(session, broker, new_topic):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps({"a": 1, "b": "x"})}])
    session.sql(f"CREATE STREAM cons (a INT, b STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    row = session.sql("SELECT STRUCT(n := a, s := b) AS st, ARRAY[a, a + 1] AS arr, MAP(b := a) AS m, "
                      "b + 'y' AS joined FROM cons;").to_dict("records")[0]
    assert row == {"ST": {"N": 1, "S": "x"}, "ARR": [1, 2], "M": {"x": 1}, "JOINED": "xy"}


def test_group_by_a_parenthesised_list_drops_partly_null_keys(session, broker, new_topic):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [
        {"key": None, "value": json.dumps(v)} for v in
        ({"a": 1, "b": "x"}, {"a": 1, "b": None}, {"a": None, "b": "x"}, {"a": 1, "b": "x"})])
    session.sql(f"CREATE STREAM pairs (a INT, b STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    handle = session.sql("SELECT a, b, COUNT(*) AS n FROM pairs GROUP BY (a, b) EMIT CHANGES;")
    deadline = time.monotonic() + 90
    while {(r["A"], r["B"]): r["N"] for r in handle.rows().to_dict("records")} != {(1, "x"): 2}:
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
    handle.stop()
    log = session.processing_log(query=handle.id)
    messages = dict(zip(log.OFFSET, log.MESSAGE))
    assert messages[1] == ("Group-by column with index 1 resolved to null. "
                           "The source row will be excluded from the table.")
    assert messages[2].startswith("Group-by column with index 0 resolved to null.")


def test_added_scalar_functions_compute_as_ksqldb_documents(session, broker, new_topic):
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps(
        {"n": 3, "s": "Ab1!", "u": "https://h.example:8080/p/q?x=1&y=2#frag", "arr": [3, 1, 3, None]})}])
    session.sql(f"CREATE STREAM fns (n INT, s STRING, u STRING, arr ARRAY<INT>) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    row = session.sql("SELECT POWER(n, 2) AS p, ROUND(DEGREES(PI())) AS d, MASK(s) AS m, CHR(65) AS c, "
                      "URL_EXTRACT_HOST(u) AS host, URL_EXTRACT_PARAMETER(u, 'y') AS y, URL_EXTRACT_FRAGMENT(u) AS f, "
                      "ARRAY_DISTINCT(arr) AS dis, ARRAY_MAX(arr) AS mx, SLICE(arr, 2, 3) AS sl, "
                      "ARRAY_JOIN(ARRAY[1, 2], '-') AS j, ELT(2, 'a', 'b') AS e, AS_VALUE(n) AS v, "
                      "ARRAY_CONCAT(arr, NULL) AS cc FROM fns;").to_dict("records")[0]
    assert row == {"P": 9.0, "D": 180, "M": "Xxn-", "C": "A", "HOST": "h.example", "Y": "2", "F": "frag",
                   "DIS": [3, 1, None], "MX": 3, "SL": [1, 3], "J": "1-2", "E": "b", "V": 3, "CC": [3, 1, 3, None]}
