"""JSON values decoded in the reader's worker: what is decoded there, what is left to the planner."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import json_columns
from kafkasql_magic.kafka.arrow_batch import arrow_schema
from kafkasql_magic.kafka.reads import bounded
from kafkasql_magic.kafka.source_options import SourceOptions
from kafkasql_magic.kafka.worker_decoding import WorkerDecoding

FIELDS = (("id", "BIGINT"), ("Name", "STRING"), ("amount", "DOUBLE"), ("n", "INT"), ("ok", "BOOLEAN"))


def decode(*values: bytes | None, fields=FIELDS, smallest=1):
    flag, *columns = json_columns.decode(pa.array(values, pa.binary()), fields, smallest)
    return flag.to_pylist(), [c.to_pylist() for c in columns]


def test_objects_become_typed_columns_matched_case_insensitively():
    flag, columns = decode(b'{"ID": 7, "name": "a", "AMOUNT": 2, "n": -3, "ok": true, "extra": [1]}',
                           b' {"id": 8, "amount": 1.5e3, "name": null}\t ')
    assert flag == [True, True]
    assert columns == [[7, 8], ["a", None], [2.0, 1500.0], [-3, None], [True, None]]


@pytest.mark.parametrize("doubtful", [
    None, b'null', b'[1]', b'5', b'', b'  ', b'{"id": 1} x', b'{"id": 1} {"id": 2}', b'{"id": 1}}',
    b'\t{"id": 1}', b'\xef\xbb\xbf{"id": 1}', b'{"id": 1,\n"n": 2}', b'{"amount": -0}', b'{"amount": NaN}',
    b'{"amount": -Infinity}',
])
def test_a_record_that_may_differ_is_left_to_the_planner_and_the_rest_decoded(doubtful):
    flag, columns = decode(b'{"id": 1}', doubtful, b'{"id": 3}')
    assert flag == [True, False, True]
    assert columns[0] == [1, None, 3]


@pytest.mark.parametrize("odd", [
    b'{"id": "2"}',  # a member of another type: Spark's cast decides
    b'{"id": 1.5}',
    b'{"n": 2147483648}',  # out of INT's range: the planner's conversion error
    b'{"id": 1, "id": 2}',  # a member twice
    b'{"id": {"a": 1}}',
    b'{"id": 1, "Id": 2}',  # two spellings of one column
    b'{"name": "\\ud800"}',  # a lone surrogate
    b"{'id': 1}",  # single quotes (Spark reads them)
])
def test_a_record_pyarrow_cannot_read_exactly_is_left_to_the_planner(odd):
    good = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(6)]
    flag, columns = decode(*good[:3], odd, *good[3:])
    assert flag == [True] * 3 + [False] + [True] * 3
    assert columns[0] == [0, 1, 2, None, 3, 4, 5] and columns[1][4] == "n3"
    # parts of `smallest` records or fewer are not split: the odd record's part goes to Spark
    flag, _ = decode(*(good * 20), odd, *(good * 20), smallest=16)
    assert flag[120] is False and 200 < sum(flag) < 240


def test_a_record_that_is_not_utf8_is_left_to_the_planner():
    flag, columns = decode(b'{"id": 1}', b'{"id": 2, "name": "\xff"}', None, b'{"id": 3, "name": "\xc3\xa9"}')
    assert flag == [True, False, False, True] and columns[:2] == [[1, None, None, 3], [None, None, None, "\u00e9"]]


def test_two_spellings_in_different_records_each_match():
    flag, columns = decode(b'{"id": 1}', b'{"ID": 2}', b'{"Id": 3}')
    assert flag == [True] * 3 and columns[0] == [1, 2, 3]


def test_only_flat_json_objects_of_primitive_columns_are_decoded_in_the_worker():
    pairs = [("a", "BIGINT"), ("b", "STRING")]
    assert json_columns.worker_fields("JSON", {}, "NONE", pairs) == tuple(pairs)
    assert json_columns.worker_fields("JSON", {}, "NONE", pairs[:1]) == tuple(pairs[:1])
    assert json_columns.worker_fields("JSON", {"WRAP_SINGLE_VALUE": "false"}, "NONE", pairs[:1]) is None
    assert json_columns.worker_fields("JSON", {}, "DEBEZIUM", pairs) is None
    assert json_columns.worker_fields("AVRO", {}, "NONE", pairs) is None
    assert json_columns.worker_fields("JSON", {}, "NONE", pairs + [("c", "ARRAY")]) is None


def test_the_read_option_reaches_the_reader_and_its_schema():
    decoding = WorkerDecoding(json_value=(("id", "BIGINT"), ("v", "STRING")))
    options = bounded("b:1", "t", shape=decoding).options()
    assert json.loads(options["jsonValueColumns"]) == [["id", "BIGINT"], ["v", "STRING"]]
    parsed = SourceOptions.parse(options, streaming=False)
    assert parsed.decoding == decoding
    assert arrow_schema(parsed.decoding).names[-3:] == [json_columns.DECODED, "__json_0", "__json_1"]
    assert "jsonValueColumns" not in bounded("b:1", "t").options()


@pytest.mark.parametrize("bad", ['[["id"]]', '[["id", "DATE"]]', "[]", "id"])
def test_a_bad_json_columns_option_is_named(bad):
    with pytest.raises(KafkaError, match="jsonValueColumns must be a JSON list of"):
        SourceOptions.parse({"bootstrap.servers": "b:1", "topic": "t", "jsonValueColumns": bad}, streaming=False)


PIECES = ["{", "}", " ", "\t", "\n", "\r", "-0", "0", "1", ".", "e", ":", ",", "[", "]", '"a"', "NaN", "Infinity",
          "x", "-", "N", "aN", "é", " -0 ", "-0.5", "-01", '{"id": -0}']


def test_the_quick_candidate_test_is_the_patterns_record_for_record():
    import random

    import numpy as np

    rnd = random.Random(15)
    for _ in range(400):
        values = []
        for _ in range(rnd.randint(0, 50)):
            if rnd.random() < 0.05:
                values.append(None)
                continue
            text = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 12)))
            if rnd.random() < 0.6:  # mostly the usual shape, with blanks around now and then
                text = rnd.choice(["", "", " "]) + "{" + text + "}" + rnd.choice(["", "", " ", "\t", "\n"])
            values.append(text)
        text = pa.array(values, pa.string())
        for part in (text, text.slice(min(3, len(text))), text.slice(0, len(text) // 2)):
            expected = json_columns._by_patterns(part) if len(part) else np.zeros(0, dtype=bool)
            assert json_columns.candidate_mask(part).tolist() == expected.tolist(), part.to_pylist()
