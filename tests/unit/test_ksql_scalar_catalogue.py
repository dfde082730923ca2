"""Every scalar function ksqlDB's reference lists is known here, and the late additions (TIME,
JSON_CONCAT, JSON_ARRAY_CONTAINS, ENTRIES, GENERATE_SERIES, TRUNC, MD5, FIELD over an array,
ARRAY_SORT with a direction) type as ksqlDB types them. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.typetext import display
from kafkasql_magic.typecheck import check_expression, lambdas, signatures

#: The scalar functions of ksqlDB's reference (developer-guide/ksqldb-reference/scalar-functions), by section.
KSQLDB_SCALAR_FUNCTIONS = """
ABS ACOS ASIN AS_VALUE ATAN ATAN2 CBRT CEIL COS COSH COT DEGREES ENTRIES EXP FLOOR GENERATE_SERIES
GEO_DISTANCE GREATEST LEAST LN LOG PI POWER RADIANS RANDOM ROUND SIGN SIN SINH SQRT TAN TANH TRUNC
ARRAY ARRAY_CONCAT ARRAY_CONTAINS ARRAY_DISTINCT ARRAY_EXCEPT ARRAY_INTERSECT ARRAY_JOIN ARRAY_LENGTH
ARRAY_MAX ARRAY_MIN ARRAY_REMOVE ARRAY_SORT ARRAY_UNION AS_MAP ELT FIELD JSON_ARRAY_CONTAINS MAP MAP_KEYS
MAP_VALUES MAP_UNION SLICE
FILTER REDUCE TRANSFORM
CHR CONCAT CONCAT_WS ENCODE EXTRACTJSONFIELD FROM_BYTES IS_JSON_STRING JSON_ARRAY_LENGTH JSON_CONCAT
JSON_KEYS JSON_RECORDS JSON_ITEMS TO_JSON_STRING INITCAP INSTR LCASE LEN LPAD MASK MASK_KEEP_LEFT
MASK_KEEP_RIGHT MASK_LEFT MASK_RIGHT MD5 REPLACE REGEXP_EXTRACT REGEXP_EXTRACT_ALL REGEXP_REPLACE
REGEXP_SPLIT_TO_ARRAY RPAD SPLIT SPLIT_TO_MAP SUBSTRING TO_BYTES TRIM UCASE UUID
BIGINT_FROM_BYTES DOUBLE_FROM_BYTES INT_FROM_BYTES
COALESCE IFNULL NULLIF
CONVERT_TZ DATEADD DATESUB FORMAT_DATE FORMAT_TIME FORMAT_TIMESTAMP FROM_DAYS FROM_UNIXTIME PARSE_DATE
PARSE_TIME PARSE_TIMESTAMP TIMEADD TIMESUB TIMESTAMPADD TIMESTAMPSUB UNIX_DATE UNIX_TIMESTAMP
URL_DECODE_PARAM URL_ENCODE_PARAM URL_EXTRACT_FRAGMENT URL_EXTRACT_HOST URL_EXTRACT_PARAMETER
URL_EXTRACT_PATH URL_EXTRACT_PORT URL_EXTRACT_PROTOCOL URL_EXTRACT_QUERY
DATETOSTRING STRINGTODATE STRINGTOTIMESTAMP TIMESTAMPTOSTRING
""".split()


def test_every_function_of_ksqldbs_reference_is_known():
    missing = [n for n in KSQLDB_SCALAR_FUNCTIONS if not signatures.is_known(n) and not lambdas.is_lambda_function(n)]
    assert missing == []


T = ast.Type
COLUMNS = {"T": T("TIME"), "M": T("MAP", key=T("STRING"), value=T("DOUBLE")), "D": T("DECIMAL", 7, 2),
           "X": T("DOUBLE"), "N": T("INT"), "ARR": T("ARRAY", element=T("STRING"))}


@pytest.mark.parametrize("text, typed", [
    ("PARSE_TIME('10:00', 'HH:mm')", "TIME"),
    ("FORMAT_TIME(t, 'HH:mm')", "STRING"),
    ("TIMEADD(MINUTES, 5, t)", "TIME"),
    ("TIMESUB(HOURS, n, t)", "TIME"),
    ("JSON_ARRAY_CONTAINS('[1]', n)", "BOOLEAN"),
    ("JSON_CONCAT('{}', '[]', '1')", "STRING"),
    ("ENTRIES(m, false)", "ARRAY<STRUCT<`K` STRING, `V` DOUBLE>>"),
    ("GENERATE_SERIES(1, n)", "ARRAY<INTEGER>"),
    ("GENERATE_SERIES(1, 10000000000, 2)", "ARRAY<BIGINT>"),
    ("TRUNC(x)", "BIGINT"),
    ("TRUNC(x, 1)", "DOUBLE"),
    ("TRUNC(d, -2)", "DECIMAL(7, 2)"),
    ("MD5('x')", "STRING"),
    ("FIELD('a', arr)", "INTEGER"),
    ("FIELD('a', 'b', 'c')", "INTEGER"),
    ("ARRAY_SORT(arr, 'DESC')", "ARRAY<STRING>"),
])
def test_added_functions_type_as_ksqldb_types_them(text, typed):
    expr = parse_statement(f"SELECT {text} FROM s;").items[0].expr
    assert display(check_expression(expr, COLUMNS, "ksql")) == typed


def test_a_time_unit_is_a_word_not_a_column_in_timeadd():
    expr = parse_statement("SELECT TIMEADD(SECONDS, 1, t) FROM s;").items[0].expr
    assert display(check_expression(expr, {"T": T("TIME")}, "ksql")) == "TIME"  # SECONDS is no column
