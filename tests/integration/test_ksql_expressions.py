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


def test_date_time_json_map_mask_url_and_geo_functions_compute_as_ksqldb_documents(session, broker, new_topic):
    import datetime
    import math

    topic = new_topic()
    ms, days = 1_700_000_000_000, 19_000
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps(
        {"ms": ms, "days": days, "u": "https://h.example:8080/p?x=1"})}])
    session.sql(f"CREATE STREAM fns2 (ms BIGINT, days INT, u STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    row = session.sql(
        "SELECT UNIX_TIMESTAMP(TIMESTAMPADD(HOURS, 2, FROM_UNIXTIME(ms))) AS plus2h, "
        "UNIX_TIMESTAMP(TIMESTAMPSUB(MINUTES, 1, FROM_UNIXTIME(ms))) AS minus1m, "
        "UNIX_DATE(DATEADD(DAYS, 3, FROM_DAYS(days))) AS plus3d, UNIX_DATE(DATESUB(HOURS, 48, FROM_DAYS(days))) AS minus2d, "
        "FORMAT_DATE(FROM_DAYS(days), 'yyyy-MM-dd') AS fd, FORMAT_TIMESTAMP(FROM_UNIXTIME(ms), 'yyyy-MM-dd HH:mm') AS ft, "
        "TIMESTAMPTOSTRING(ms, 'HH:mm', 'America/New_York') AS tts, UNIX_DATE(PARSE_DATE('2024-02-29', 'yyyy-MM-dd')) AS pd, "
        "STRINGTODATE('2024-02-29', 'yyyy-MM-dd') AS sd, DATETOSTRING(days, 'yyyy-MM-dd') AS ds, "
        "UNIX_TIMESTAMP(CONVERT_TZ(FROM_UNIXTIME(ms), 'UTC', 'America/New_York')) AS ny, "
        "IS_JSON_STRING('{\"a\": 1}') AS j1, IS_JSON_STRING('x') AS j2, JSON_ARRAY_LENGTH('[1, 2, 3]') AS jl, "
        "JSON_KEYS('{\"a\": 1, \"b\": {\"c\": 2}}') AS jk, JSON_RECORDS('{\"a\": \"x\", \"b\": {\"c\": 2}, \"d\": 1}') AS jr, "
        "JSON_ITEMS('[1, \"a\", {\"b\": 2}]') AS ji, TO_JSON_STRING(STRUCT(a := 1, b := 'x')) AS tj, "
        "TO_JSON_STRING('q') AS tq, SPLIT_TO_MAP('a=1;b=2;c;a=3', ';', '=') AS sm, "
        "MAP_UNION(MAP('a' := 1, 'b' := 2), MAP('b' := 3)) AS mu, FIELD('b', 'a', 'b') AS f1, FIELD('z', 'a') AS f0, "
        "ENCODE('hi', 'utf8', 'hex') AS eh, ENCODE('aGk=', 'base64', 'utf8') AS eb, "
        "REGEXP_EXTRACT_ALL('[0-9]+', 'a1b22') AS ra, REGEXP_SPLIT_TO_ARRAY('a1b22c', '[0-9]+') AS rs, "
        "MASK_LEFT('Ab1!cd', 2) AS ml, MASK_RIGHT('Ab1!cd', 2) AS mr, MASK_KEEP_LEFT('Ab1!cd', 2) AS mkl, "
        "MASK_KEEP_RIGHT('Ab1!cd', 2) AS mkr, URL_ENCODE_PARAM('a b&c') AS ue, URL_DECODE_PARAM('a+b%26c') AS ud, "
        "URL_EXTRACT_PORT(u) AS port, GEO_DISTANCE(37.4439, -122.1663, 51.5257, -0.1122) AS km, "
        "GEO_DISTANCE(37.4439, -122.1663, 51.5257, -0.1122, 'miles') AS mi FROM fns2;").to_dict("records")[0]
    epoch = datetime.date(1970, 1, 1)
    leap_day = (datetime.date(2024, 2, 29) - epoch).days

    def haversine(radius):
        lat1, lon1, lat2, lon2 = map(math.radians, (37.4439, -122.1663, 51.5257, -0.1122))
        a = math.sin((lat2 - lat1) / 2) ** 2 + math.sin((lon2 - lon1) / 2) ** 2 * math.cos(lat1) * math.cos(lat2)
        return 2 * math.asin(math.sqrt(a)) * radius

    km, mi = row.pop("KM"), row.pop("MI")
    assert math.isclose(km, haversine(6371), rel_tol=1e-9) and 8600 < km < 8700
    assert math.isclose(mi, haversine(3959), rel_tol=1e-9)
    assert row == {
        "PLUS2H": ms + 7_200_000, "MINUS1M": ms - 60_000, "PLUS3D": days + 3, "MINUS2D": days - 2,
        "FD": str(epoch + datetime.timedelta(days=days)), "FT": "2023-11-14 22:13", "TTS": "17:13", "PD": leap_day, "SD": leap_day,
        "DS": str(epoch + datetime.timedelta(days=days)), "NY": ms - 5 * 3_600_000,
        "J1": True, "J2": False, "JL": 3, "JK": ["a", "b"], "JR": {"a": '"x"', "b": '{"c":2}', "d": "1"},
        "JI": ["1", '"a"', '{"b":2}'], "TJ": '{"A":1,"B":"x"}', "TQ": '"q"', "SM": {"a": "3", "b": "2"},
        "MU": {"a": 1, "b": 3}, "F1": 2, "F0": 0, "EH": "6869", "EB": "hi", "RA": ["1", "22"],
        "RS": ["a", "b", "c"], "ML": "Xx1!cd", "MR": "Ab1!xx", "MKL": "Abn-xx", "MKR": "Xxn-cd",
        "UE": "a+b%26c", "UD": "a b&c", "PORT": 8080}


def test_time_json_series_entries_sort_trunc_and_md5_compute_as_ksqldb_documents(session, broker, new_topic):
    import datetime
    import hashlib
    from decimal import Decimal

    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps(
        {"t": "10:11:12.345", "m": {"b": 2, "a": 1}, "arr": [3, None, 1, 2], "d": "-12345.67", "x": -2.78})}])
    session.sql(f"CREATE STREAM fns3 (t TIME, m MAP<STRING, INT>, arr ARRAY<INT>, d DECIMAL(7, 2), x DOUBLE) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    row = session.sql(
        "SELECT PARSE_TIME('23:59:58', 'HH:mm:ss') AS pt, PARSE_TIME('nope', 'HH:mm') AS bad_time, "
        "FORMAT_TIME(t, 'HH.mm.ss.SSS') AS ft, TIMEADD(SECONDS, 3, PARSE_TIME('23:59:58', 'HH:mm:ss')) AS wrapped, "
        "TIMESUB(HOURS, 11, t) AS back, TIMEADD(MILLISECONDS, 1, t) AS ms, "
        "JSON_ARRAY_CONTAINS('[1, 2.5, \"x\", true, null]', 1) AS c_int, "
        "JSON_ARRAY_CONTAINS('[1, 2.5]', 2.5E0) AS c_double, JSON_ARRAY_CONTAINS('[1.0]', 1) AS c_float_int, "
        "JSON_ARRAY_CONTAINS('[\"x\"]', 'x') AS c_str, JSON_ARRAY_CONTAINS('[null]', NULL) AS c_null, "
        "JSON_ARRAY_CONTAINS('{\"a\": 1}', 1) AS c_obj, "
        "JSON_CONCAT('{\"a\": 1, \"b\": 2}', '{\"a\": 3, \"c\": 4}') AS jo, JSON_CONCAT('[1, 2]', '[3]') AS ja, "
        "JSON_CONCAT('[1]', '{\"a\": 1}', '2') AS jm, JSON_CONCAT('[1]', 'not json') AS jn, "
        "ENTRIES(m, true) AS es, GENERATE_SERIES(1, 7, 3) AS gs, GENERATE_SERIES(3, 1) AS gd, "
        "GENERATE_SERIES(1, 3, -1) AS wrong_sign, ARRAY_SORT(arr, 'desc') AS sd, ARRAY_SORT(arr) AS sa, "
        "ARRAY_SORT(arr, 'sideways') AS sx, FIELD('b', ARRAY['a', 'b']) AS fa, "
        "TRUNC(d, -3) AS td, TRUNC(d) AS t0, TRUNC(x) AS tx, TRUNC(x, 1) AS tx1, MD5('hash me') AS h "
        "FROM fns3;").to_dict("records")[0]
    assert row == {
        "PT": datetime.time(23, 59, 58), "BAD_TIME": None, "FT": "10.11.12.345", "WRAPPED": datetime.time(0, 0, 1),
        "BACK": datetime.time(23, 11, 12, 345000), "MS": datetime.time(10, 11, 12, 346000),
        "C_INT": True, "C_DOUBLE": True, "C_FLOAT_INT": False, "C_STR": True, "C_NULL": True, "C_OBJ": False,
        "JO": '{"a":3,"b":2,"c":4}', "JA": "[1,2,3]", "JM": '[1,{"a":1},2]', "JN": None,
        "ES": [{"K": "a", "V": 1}, {"K": "b", "V": 2}], "GS": [1, 4, 7], "GD": [3, 2, 1], "WRONG_SIGN": None,
        "SD": [3, 2, 1, None], "SA": [1, 2, 3, None], "SX": None, "FA": 2,
        "TD": Decimal("-12000.00"), "T0": Decimal("-12345.00"), "TX": -2, "TX1": -2.7,
        "H": hashlib.md5(b"hash me").hexdigest()}
    messages = set(session.processing_log().MESSAGE)  # a record's first failure is logged
    assert "Error computing expression PARSE_TIME('nope', 'HH:mm') for column BAD_TIME with index 1: " \
           "Failed to parse time 'nope' with formatter 'HH:mm'" in messages


def test_a_comparison_with_null_is_false_in_ksql_and_null_in_materialize(session, broker, new_topic):
    """ksqlDB's generated code tests comparison operands for NULL first: `a > b` is false, so
    `NOT (a > b)` holds; PostgreSQL's (Materialize's) three-valued logic keeps NULL."""
    topic = new_topic()
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": json.dumps(v)} for v in
                                              ({"a": 1, "b": None, "n": 1}, {"a": 2, "b": 1, "n": 2})])
    session.sql(f"CREATE STREAM cmp (a INT, b INT, n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    rows = session.sql("SELECT n, a > b AS gt, a = b AS eq, NOT (a > b) AS ngt, a IN (b, 5) AS isin, "
                       "a NOT IN (b, 5) AS notin, a BETWEEN b AND 10 AS btw FROM cmp;").to_dict("records")
    assert rows == [{"N": 1, "GT": False, "EQ": False, "NGT": True, "ISIN": False, "NOTIN": True, "BTW": False},
                    {"N": 2, "GT": True, "EQ": False, "NGT": False, "ISIN": False, "NOTIN": True, "BTW": True}]
    assert session.sql("SELECT n FROM cmp WHERE NOT (a > b);").N.tolist() == [1]
    mz = session.sql("SELECT n, a > b AS gt FROM cmp", dialect="materialize").to_dict("records")
    assert [(r["n"], None if r["gt"] is None or r["gt"] != r["gt"] else r["gt"]) for r in mz] == [(1, None), (2, True)]
