"""PostgreSQL / Materialize functions and text forms, run in Spark against PostgreSQL's answers."""

from __future__ import annotations

import base64

import pytest
from pyspark.sql import functions as F

from kafkasql_magic.engine.functions.postgres_spark import FUNCTIONS, lookup, missing_function_message, pg_text
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql.ast import Literal, Type


class Failures:
    """The compile context: collects (condition, message) like the planner's."""

    def __init__(self):
        self.checks = []

    def fail(self, condition, message):
        self.checks.append(F.when(condition, message))


def call(spark, name, rows, schema, *literal_args):
    """Run FUNCTIONS[name] over the columns of `rows` then the literal arguments; return
    (results, the first failure message per row)."""
    df = spark.createDataFrame(rows, schema)
    ctx = Failures()
    columns = [F.col(c) for c in df.columns] + [F.lit(v) for v in literal_args]
    exprs = [Literal(None, "NULL")] * len(df.columns) + [Literal(v, "STRING") for v in literal_args]
    result = FUNCTIONS[name].build(ctx, columns, exprs)
    error = F.coalesce(*ctx.checks) if ctx.checks else F.lit(None)
    return [(r[0], r[1]) for r in df.select(result, error).collect()]


def values(spark, name, rows, schema, *literal_args):
    return [v for v, _ in call(spark, name, rows, schema, *literal_args)]


def test_encode_and_decode(spark):
    assert values(spark, "ENCODE", [(b"me",), (b"\x00\xff",), (None,)], "b binary", "hex") == ["6d65", "00ff", None]
    long = bytes(range(60))
    (wrapped,) = values(spark, "ENCODE", [(long,)], "b binary", "base64")
    assert wrapped == base64.b64encode(long).decode()[:76] + "\n" + base64.b64encode(long).decode()[76:]
    assert values(spark, "DECODE", [("6D65",), (wrapped,)], "s string", "hex")[0] == b"me"
    assert values(spark, "DECODE", [(wrapped,)], "s string", "base64") == [long]
    assert call(spark, "DECODE", [("zz",)], "s string", "hex") == [(None, 'invalid hex input: "zz"')]
    with pytest.raises(StatementError, match='unrecognized encoding: "rot13"'):
        call(spark, "ENCODE", [(b"x",)], "b binary", "rot13")


def test_convert_from_and_lengths(spark):
    rows = [(b"caf\xc3\xa9",), (b"\xc3\x28",)]
    assert call(spark, "CONVERT_FROM", rows, "b binary", "utf8") == [
        ("café", None), (None, 'invalid byte sequence for encoding "UTF8": 0xc3 0x28')]
    with pytest.raises(StatementError, match='invalid source encoding name "latin9"'):
        call(spark, "CONVERT_FROM", rows, "b binary", "latin9")
    assert values(spark, "LENGTH", [(b"caf\xc3\xa9",)], "b binary") == [5]      # bytes
    assert values(spark, "LENGTH", [("café",)], "s string") == [4]              # characters
    assert values(spark, "LENGTH", [(b"caf\xc3\xa9",)], "b binary", "utf8") == [4]
    assert values(spark, "OCTET_LENGTH", [("café",)], "s string") == [5]
    assert values(spark, "OCTET_LENGTH", [(b"ab",)], "b binary") == [2]


def test_position_and_substring(spark):
    assert values(spark, "POSITION", [("om", "Thomas"), ("x", "Thomas")], "sub string, s string") == [3, 0]
    assert values(spark, "STRPOS", [("Thomas", "om")], "s string, sub string") == [3]
    rows = [("Thomas", 2, 3), ("Thomas", 0, 3), ("Thomas", -5, 3), ("Thomas", 5, 10)]
    assert values(spark, "SUBSTRING", rows, "s string, a int, n int") == ["hom", "Th", "", "as"]
    assert values(spark, "SUBSTRING", [("Thomas", 3), ("Thomas", -1)], "s string, a int") == ["omas", "Thomas"]
    assert call(spark, "SUBSTRING", [("Thomas", 1, -1)], "s string, a int, n int") == [
        (None, "negative substring length not allowed")]


def test_list_length_and_map_build(spark):
    assert values(spark, "LIST_LENGTH", [([1, 2, 3],), ([],), (None,)], "l array<int>") == [3, 0, None]
    headers = [([("a", b"1"), ("b", b"2"), ("a", b"3"), (None, b"4")],), (None,)]
    assert values(spark, "MAP_BUILD", headers, "h array<struct<key:string,value:binary>>") == [
        {"a": b"3", "b": b"2"}, None]


def test_missing_functions_say_so_in_materializes_words():
    assert missing_function_message("Nope", ["integer", "text"]) == "function nope(integer, text) does not exist"
    with pytest.raises(StatementError, match=r"^function list_length\(integer, integer\) does not exist$"):
        lookup("list_length", ["integer", "integer"])
    with pytest.raises(StatementError, match=r"^function array_to_json\(text\[\]\) does not exist$"):
        lookup("array_to_json", ["text[]"])
    assert lookup("encode", ["bytea", "text"]) is FUNCTIONS["ENCODE"]


def test_text_forms(spark):
    rec = Type("STRUCT", fields=(("a", Type("INT")), ("b", Type("STRING")), ("c", Type("BOOLEAN"))))
    df = spark.createDataFrame(
        [(b"me", True, ["a", "b c", None, "", "NULL", 'q"'], (1, "x,y", False), (None, "plain", None), [b"\x01"])],
        "b binary, t boolean, l array<string>, r struct<a:int,b:string,c:boolean>, "
        "n struct<a:int,b:string,c:boolean>, lb array<binary>")
    row = df.select(
        pg_text(F.col("b"), Type("BYTES")), pg_text(F.col("t"), Type("BOOLEAN")),
        pg_text(F.col("l"), Type("ARRAY", element=Type("STRING"))), pg_text(F.col("r"), rec),
        pg_text(F.col("n"), rec), pg_text(F.col("lb"), Type("ARRAY", element=Type("BYTES"))),
    ).first()
    assert tuple(row) == ("\\x6d65", "true", '{a,"b c",NULL,"","NULL","q\\""}', '(1,"x,y",f)', "(,plain,)",
                          '{"\\\\x01"}')


def test_list_agg_and_map_agg(spark):
    from kafkasql_magic.engine.aggregate.functions_spark import AGGREGATES, SortKey, Sorting

    df = spark.createDataFrame(
        [("g", 1, "a", "x"), ("g", 3, "a", "z"), ("g", 2, None, "y"), ("g", 4, "b", None), ("h", 1, "c", "w")],
        "g string, o int, k string, v string")
    arrival = Sorting((), F.col("o"))
    list_agg = AGGREGATES["LIST_AGG"].build([F.col("v")], [], arrival)
    map_agg = AGGREGATES["MAP_AGG"].build([F.col("k"), F.col("v")], [], arrival)
    by_value = AGGREGATES["LIST_AGG"].build([F.col("v")], [], Sorting((SortKey(F.col("v"), True, True),), F.col("o")))
    joined = AGGREGATES["STRING_AGG"].build([F.col("v"), F.lit("-")], [], arrival)
    rows = {r.g: (r.l, r.m) for r in df.groupBy("g").agg(list_agg.alias("l"), map_agg.alias("m")).collect()}
    ordered = {r.g: (r.d, r.s) for r in df.groupBy("g").agg(by_value.alias("d"), joined.alias("s")).collect()}
    assert ordered == {"g": ([None, "z", "y", "x"], "x-y-z"), "h": (["w"], "w")}
    assert rows == {"g": (["x", "y", "z", None], {"a": "z", "b": None}), "h": (["w"], {"c": "w"})}


def test_text_functions_give_postgresqls_answers(spark):
    text = "s string"
    assert values(spark, "UPPER", [("café",), (None,)], text) == ["CAFÉ", None]
    assert values(spark, "LOWER", [("ÀB",)], text) == ["àb"]
    assert values(spark, "CHAR_LENGTH", [("café",)], text) == [4]
    rows = [("abcde", 2), ("abcde", -2), ("ab", 5), ("ab", -5), ("abc", 0), (None, 1), ("ab", None)]
    assert values(spark, "LEFT", rows, "s string, n int") == ["ab", "abc", "ab", "", "", None, None]
    assert values(spark, "RIGHT", rows, "s string, n int") == ["de", "cde", "ab", "", "", None, None]
    assert values(spark, "BTRIM", [("  x  ",)], text) == ["x"]
    assert values(spark, "BTRIM", [("xyxaxy",)], text, "xy") == ["a"]
    assert values(spark, "REVERSE", [("abc",)], text) == ["cba"]
    assert values(spark, "REPEAT", [("ab", 3), ("ab", 0), ("ab", -1), ("ab", None)], "s string, n int") == [
        "ababab", "", "", None]
    assert values(spark, "STARTS_WITH", [("alphabet",), ("beta",)], text, "alph") == [True, False]


def test_text_functions_in_a_query_and_their_refusal_in_materializes_words(session):
    rows = session.sql("SELECT upper('ab') AS u, repeat('ab', 2) AS r, btrim('  x ') AS b, left('abc', -1) AS l, "
                       "right('abc', 2) AS r2", dialect="materialize")
    assert rows.values.tolist() == [["AB", "abab", "x", "ab", "bc"]]
    with pytest.raises(StatementError, match=r"function upper\(int4\) does not exist"):
        session.sql("SELECT upper(1) AS u", dialect="materialize")
    with pytest.raises(StatementError, match=r"function repeat\(text, text\) does not exist"):
        session.sql("SELECT repeat('a', 'b') AS u", dialect="materialize")


def test_date_trunc_gives_postgresqls_answers(spark):
    from datetime import datetime

    at = [(datetime(2024, 7, 17, 13, 45, 30, 123456),), (None,)]
    schema = "t timestamp"
    expected = {"microseconds": datetime(2024, 7, 17, 13, 45, 30, 123456),
                "milliseconds": datetime(2024, 7, 17, 13, 45, 30, 123000),
                "second": datetime(2024, 7, 17, 13, 45, 30), "minute": datetime(2024, 7, 17, 13, 45),
                "hour": datetime(2024, 7, 17, 13), "day": datetime(2024, 7, 17),
                "week": datetime(2024, 7, 15),  # a Monday
                "month": datetime(2024, 7, 1), "quarter": datetime(2024, 7, 1), "year": datetime(2024, 1, 1),
                "decade": datetime(2020, 1, 1), "century": datetime(2001, 1, 1), "millennium": datetime(2001, 1, 1),
                "MINUTES": datetime(2024, 7, 17, 13, 45)}
    for unit, truncated in expected.items():
        df = spark.createDataFrame(at, schema)
        built = FUNCTIONS["DATE_TRUNC"].build(Failures(), [F.lit(unit), F.col("t")],
                                              [Literal(unit, "STRING"), Literal(None, "NULL")])
        assert [r[0] for r in df.select(built).collect()] == [truncated, None], unit
    with pytest.raises(StatementError, match='unit "fortnight" not recognized for type timestamp'):
        FUNCTIONS["DATE_TRUNC"].build(Failures(), [F.lit("fortnight"), F.col("t")],
                                      [Literal("fortnight", "STRING"), Literal(None, "NULL")])


def test_date_trunc_buckets_a_sources_records_in_a_query(session, broker):
    import uuid

    from kafkasql_magic.kafka.producer import produce

    topic = f"dt_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": b"x", "partition": 0, "timestamp": ms}
                                              for ms in (1_700_000_000_000, 1_700_000_030_000, 1_700_000_090_000)],
            create_partitions=1)
    session.sql(f"CREATE SOURCE {topic} FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE TIMESTAMP AS ts",
                dialect="materialize")
    rows = session.sql(f"SELECT date_trunc('minute', ts) AS m, count(*) AS n FROM {topic} "
                       "GROUP BY date_trunc('minute', ts) ORDER BY m",
                       dialect="materialize")
    assert [(str(m), n) for m, n in rows.values.tolist()] == [("2023-11-14 22:13:00+00:00", 2),
                                                         ("2023-11-14 22:14:00+00:00", 1)]
    with pytest.raises(StatementError, match=r"function date_trunc\(text, int4\) does not exist"):
        session.sql("SELECT date_trunc('minute', 1) AS m", dialect="materialize")

