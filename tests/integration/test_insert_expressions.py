"""INSERT VALUES with expressions, as ksqlDB's insert-values tests write them: arithmetic,
functions, ARRAY / MAP / STRUCT constructors (NULL elements too), STRUCT fields coerced by name
to the column's type; a column in a value is refused with ksqlDB's messages. Read back with
confluent-kafka."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.peek import fetch_records


def test_insert_values_evaluates_expressions_into_the_record(session, broker):
    tag = uuid.uuid4().hex[:8].upper()
    name, topic = f"IV_{tag}", f"t-iv-{tag.lower()}"
    session.sql(f"CREATE STREAM {name} (K INT KEY, I INT, S STRING, A ARRAY<INT>, M MAP<STRING, BIGINT>, "
                "V STRUCT<foo DECIMAL(2, 1), `bar` ARRAY<VARCHAR>, BAZ DOUBLE>) "
                f"WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    session.sql(f"INSERT INTO {name} (ROWTIME, K, I, S, A, M, V) VALUES (1000 + 234, 2 * 3, -1, CONCAT('a', 'b'), "
                "ARRAY[1, 1 + 1, CAST(NULL AS INT)], MAP('a' := 0, 'b' := CAST(NULL AS BIGINT)), "
                "STRUCT(FOO := 2.1, `bar` := ARRAY['bar'], BAZ := 2));")
    session.sql(f"INSERT INTO {name} (K, V) VALUES (1, STRUCT());")
    with pytest.raises(StatementError, match=r"^Unsupported column reference in insert value: \(I \+ 1\)$"):
        session.sql(f"INSERT INTO {name} (K, I) VALUES (1, I + 1);")
    with pytest.raises(StatementError, match="'FOO' is not a valid stream/table name or alias."):
        session.sql(f"INSERT INTO {name} (K, S) VALUES (1, FOO.bar);")
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=2, timeout_s=30, until_end=False)
    assert [(r["key"], r["timestamp"]) for r in got][:1] == [(struct.pack(">i", 6), 1234)]
    assert [json.loads(r["value"]) for r in got] == [
        {"I": -1, "S": "ab", "A": [1, 2, None], "M": {"a": 0, "b": None},
         "V": {"FOO": 2.1, "bar": ["bar"], "BAZ": 2.0}},
        {"I": None, "S": None, "A": None, "M": None, "V": {"FOO": None, "bar": None, "BAZ": None}}]
