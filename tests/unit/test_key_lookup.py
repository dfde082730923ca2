"""Pull-query key lookups: which keys a WHERE clause pins, and which partitions hold them. No Spark."""

from __future__ import annotations

import struct

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.analysis.lookup import KeyLookup
from kafkasql_magic.kafka.key_partitions import key_bytes, key_partitions
from kafkasql_magic.kafka.partitioner import default_partition, murmur2, windowed_partition
from kafkasql_magic.kafka.reads import bounded
from kafkasql_magic.sql import parse_statement

SETTINGS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}
TABLES = {
    "kt": "CREATE TABLE kt (id INT PRIMARY KEY, v STRING) WITH (kafka_topic='kt', value_format='JSON');",
    "st": "CREATE TABLE st (name STRING PRIMARY KEY, v STRING) WITH (kafka_topic='st', value_format='JSON');",
    "jt": "CREATE TABLE jt (name STRING PRIMARY KEY, v STRING) WITH (kafka_topic='jt', format='JSON');",
    "dt": "CREATE TABLE dt (name STRING PRIMARY KEY, v STRING) WITH (kafka_topic='dt', format='DELIMITED');",
    "xt": "CREATE TABLE xt (x DOUBLE PRIMARY KEY, v STRING) WITH (kafka_topic='xt', value_format='JSON');",
    "wt": "CREATE TABLE wt (id INT PRIMARY KEY, v STRING) WITH (kafka_topic='wt', value_format='JSON', "
          "window_type='TUMBLING', window_size='10 SECONDS');",
    "two": "CREATE TABLE two (a INT PRIMARY KEY, b INT PRIMARY KEY, v STRING) WITH (kafka_topic='two', format='JSON');",
    "s": "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='s', value_format='JSON');",
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat = Catalog()
    for create in TABLES.values():
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


def lookup(catalog, text):
    return analyse(parse_statement(text), catalog, "ksql").lookup


def test_murmur2_matches_kafkas_published_values():
    assert [murmur2(k) for k in (b"21", b"foobar", b"abc", b"")] == [-973932308, -790332482, 479470107, 275646681]
    assert default_partition(b"21", 4) == (-973932308 & 0x7FFFFFFF) % 4


@pytest.mark.parametrize("where, values", [
    ("id = 7", (7,)),
    ("7 = id", (7,)),
    ("id = -7", (-7,)),
    ("id IN (1, 2, 2)", (1, 2)),
    ("id IN (1, 2, 3) AND v = 'x' AND id IN (2, 3, 4)", (2, 3)),
    ("v = 'x' AND id = 3", (3,)),
])
def test_where_pins_the_key(catalog, where, values):
    assert lookup(catalog, f"SELECT * FROM kt WHERE {where};") == KeyLookup("ID", values)


@pytest.mark.parametrize("text", [
    "SELECT * FROM kt;",
    "SELECT * FROM kt WHERE id = 1 OR id = 2;",
    "SELECT * FROM kt WHERE id > 1 AND id <= 4;",
    "SELECT * FROM kt WHERE id BETWEEN 1 AND 4;",
    "SELECT * FROM kt WHERE id NOT IN (1, 2);",
    "SELECT * FROM kt WHERE ABS(id) = 1;",
    "SELECT * FROM kt WHERE id = 1 AND id = 2;",  # contradictory: no key can match, the filter says so
    "SELECT * FROM kt WHERE id = 1 EMIT CHANGES;",
    "SELECT * FROM s WHERE id = 1;",
    "SELECT * FROM two WHERE a = 1 AND b = 2;",
])
def test_no_lookup_reads_every_partition(catalog, text):
    assert lookup(catalog, text) is None


def test_canonical_keys_are_serialized_as_their_writers_do(catalog):
    assert key_bytes(catalog.get("kt"), 7) == struct.pack(">i", 7)
    assert key_bytes(catalog.get("st"), "é") == "é".encode()
    assert key_bytes(catalog.get("jt"), "abc") == b'"abc"'
    assert key_bytes(catalog.get("dt"), "abc") == b"abc"
    assert key_bytes(catalog.get("xt"), 10) == struct.pack(">d", 10.0)


@pytest.mark.parametrize("table, value", [
    ("jt", 'a"b'),       # escaped in JSON
    ("jt", "é"),         # writers differ: \u00e9 or UTF-8
    ("dt", "a,b"),       # quoted in CSV
    ("dt", " a"),        # trimmed by Spark's CSV writer
    ("kt", "7"),         # not the key's type
    ("kt", 1 << 40),     # out of INT's range
])
def test_keys_whose_bytes_cannot_be_known_read_everything(catalog, table, value):
    assert key_bytes(catalog.get(table), value) is None
    assert key_partitions(catalog.get(table), [value], 4) is None


def test_key_partitions_follow_the_default_partitioner(catalog):
    table = catalog.get("kt")
    expected = sorted({default_partition(struct.pack(">i", k), 8) for k in (1, 2, 3)})
    assert key_partitions(table, [1, 2, 3], 8) == tuple(expected)


def test_a_windowed_record_is_placed_by_its_inner_key_alone():
    inner = struct.pack(">i", 7)
    window = struct.pack(">q", 1_700_000_000_000)
    placed = {windowed_partition(inner + struct.pack(">q", start), 8, 16) for start in range(0, 10**6, 10**4)}
    assert placed == {default_partition(inner, 16)}  # every window of a key in the key's partition
    assert windowed_partition(inner + window + window, 16, 16) == default_partition(inner, 16)  # SESSION: end, start
    assert any(default_partition(inner + struct.pack(">q", s), 16) != default_partition(inner, 16)
               for s in range(0, 10**5, 10**4))  # hashing the whole key would scatter the windows


def test_a_windowed_table_looks_its_inner_key_up(catalog):
    table = catalog.get("wt")
    assert lookup(catalog, "SELECT * FROM wt WHERE id = 7 AND WINDOWSTART > 0;") == KeyLookup("ID", (7,))
    assert key_bytes(table, 7) == struct.pack(">i", 7)  # no window: the partitioner hashes none
    assert key_partitions(table, [7, 9], 8) == tuple(sorted({default_partition(struct.pack(">i", k), 8)
                                                             for k in (7, 9)}))


def test_a_narrowed_read_names_its_partitions_and_keys():
    read = bounded("b:9092", "t", keys=(7,), partitions=(2,))
    assert read.options()["partitions"] == "2"
    assert read.options()["endingOffsets"] == "latest"
    assert "partition 2 only" in read.describe() and "(7)" in read.describe()
    whole = bounded("b:9092", "t", keys=(7,), partitions=None)
    assert "partitions" not in whole.options() and whole.keys is None
