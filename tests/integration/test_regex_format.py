"""FORMAT REGEX decoding in Spark: named groups to text columns, NULL for a group that did not
take part, Materialize's messages for a record that is not UTF-8 or does not match."""

from __future__ import annotations

from pyspark.sql import functions as F

from kafkasql_magic.formats.regex import NOT_UTF8, VALUE_NOT_PRESENT, RegexFormat, regex_fields, regex_spec
from kafkasql_magic.kafka.producer import produce

LOG_LINE = r"(?P<ip>\d+\.\d+\.\d+\.\d+) (?P<user_name>\w+)? ?\[(?P<ts>[^\]]+)\](?: (\d+))?"


def decode(df, pattern, role="value"):
    fields = regex_fields(pattern)
    decoded = RegexFormat().decode(F.col("raw"), fields, regex_spec(pattern), role)
    return [tuple(r) for r in df.select(*decoded.columns, decoded.error.alias("error")).collect()]


def test_groups_to_text_columns_and_errors(spark):
    df = spark.createDataFrame([
        (b"10.0.0.1 alice [2024-01-31] 200",),
        (b"10.0.0.2 [2024-02-01]",),            # user_name and the status group take no part: NULL
        (b"prefix 10.0.0.3 bob [x] tail",),     # the first match anywhere, as Rust's captures()
        (b"not a log line",),
        (b"\xc3\x28",),
        (None,),
    ], "raw binary")
    assert decode(df, LOG_LINE) == [
        ("10.0.0.1", "alice", "2024-01-31", "200", None),
        ("10.0.0.2", None, "2024-02-01", None, None),
        ("10.0.0.3", "bob", "x", None, None),
        (None, None, None, None, VALUE_NOT_PRESENT),
        (None, None, None, None, NOT_UTF8 + ' (original bytes: "c328")'),
        (None, None, None, None, None),
    ]


def test_an_empty_group_that_took_part_is_empty_text_not_null(spark):
    df = spark.createDataFrame([(b"k=",), (b"k",)], "raw binary")
    assert decode(df, r"(?P<k>\w+)(?:=(?P<v>\w*))?") == [("k", "", None), ("k", None, None)]


def test_the_first_match_decides_even_when_another_would_set_the_group(spark):
    df = spark.createDataFrame([(b"a",)], "raw binary")
    assert decode(df, r"(?:a|(?P<second>a))") == [(None, None)]


def test_a_key_that_does_not_match_is_a_null_key_not_an_error(spark):
    df = spark.createDataFrame([(b"user-7",), (b"???",)], "raw binary")
    assert decode(df, r"user-(?P<id>\d+)", role="key") == [("7", None), (None, None)]


def test_records_read_from_kafka(spark, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": "GET /a 200"}, {"value": "garbage"},
                                              {"value": "POST /b 500"}])
    raw = (spark.read.format("kafkasql")
           .options(**{"bootstrap.servers": broker.bootstrap_servers, "topic": topic}).load()
           .select("offset", F.col("value").alias("raw")).orderBy("offset"))
    pattern = r"(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3})"
    assert decode(raw, pattern) == [("GET", "/a", "200", None), (None, None, None, VALUE_NOT_PRESENT),
                                    ("POST", "/b", "500", None)]


def test_regex_sources_in_the_materialize_dialect(session, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"key": "eu-7", "value": "GET /a 200"},
                                              {"key": "us-9", "value": "POST /b 500"}])
    mz = {"dialect": "materialize"}
    session.sql(f"""CREATE SOURCE logs FROM KAFKA TOPIC '{topic}'
        KEY FORMAT REGEX '(?P<region>[a-z]+)-(?P<n>\\d+)' VALUE FORMAT REGEX '(?P<verb>\\w+) (\\S+) (?P<status>\\d+)'
        INCLUDE KEY AS nest""", **mz)
    rows = session.sql("SELECT (nest).region, (nest).n, verb, column2, status FROM logs ORDER BY verb", **mz)
    assert rows.to_dict("records") == [
        {"region": "eu", "n": "7", "verb": "GET", "column2": "/a", "status": "200"},
        {"region": "us", "n": "9", "verb": "POST", "column2": "/b", "status": "500"}]
    session.sql(f"""CREATE SOURCE flat FROM KAFKA TOPIC '{topic}'
        KEY FORMAT REGEX '[a-z]+-(?P<n>\\d+)' VALUE FORMAT TEXT INCLUDE KEY AS id""", **mz)
    assert session.sql("SELECT id, text FROM flat ORDER BY id", **mz).to_dict("records") == [
        {"id": "7", "text": "GET /a 200"}, {"id": "9", "text": "POST /b 500"}]  # one group: its value
    shown = session.sql("SHOW COLUMNS FROM logs", **mz)
    assert list(zip(shown.name, shown.type)) == [("nest", "record"), ("verb", "text"), ("column2", "text"),
                                                 ("status", "text")]
