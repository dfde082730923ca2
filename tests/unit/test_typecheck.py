"""The expression type checker: ksqlDB's rules and exact messages (Materialize's wording in that
dialect), positions with a caret, every function of the signature table. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.engine.aggregate.calls import SIGNATURES
from kafkasql_magic.typecheck import signatures
from kafkasql_magic.errors import ExpressionTypeError, KStreamError
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.typecheck import check_expression, check_select, check_type

T = ast.Type
INT, BIGINT, DOUBLE, STRING, BOOLEAN, BYTES = T("INT"), T("BIGINT"), T("DOUBLE"), T("STRING"), T("BOOLEAN"), T("BYTES")

COLUMNS = {
    "ID": INT, "N": BIGINT, "X": DOUBLE, "V": STRING, "B": BOOLEAN, "BT": BYTES,
    "D": T("DECIMAL", 4, 2), "TS": T("TIMESTAMP"), "DT": T("DATE"), "TM": T("TIME"),
    "A": T("ARRAY", element=INT), "M": T("MAP", key=STRING, value=DOUBLE),
    "S": T("STRUCT", fields=(("F", STRING), ("G", INT))),
    "H": T("ARRAY", element=T("STRUCT", fields=(("KEY", STRING), ("VALUE", BYTES)))),
    "ROWTIME": BIGINT, "ROWPARTITION": INT, "ROWOFFSET": BIGINT,
}


def type_of(text: str, dialect: str = "ksql"):
    statement = parse_statement(f"SELECT {text} FROM s", dialect=dialect)
    return check_expression(statement.items[0].expr, COLUMNS, dialect)


def error_of(statement: str, dialect: str = "ksql", columns=None) -> ExpressionTypeError:
    with pytest.raises(ExpressionTypeError) as caught:
        check_select(parse_statement(statement, dialect=dialect), columns or COLUMNS, dialect, statement)
    return caught.value


@pytest.mark.parametrize("text, expected", [
    ("1", INT), ("10000000000", BIGINT), ("1.5", T("DECIMAL", 2, 1)), ("0.05", T("DECIMAL", 2, 2)),
    ("1e3", DOUBLE), ("'a'", STRING), ("true", BOOLEAN), ("NULL", None),
    ("id + 1", INT), ("id + n", BIGINT), ("n * 2.5", T("DECIMAL", 22, 1)), ("x - id", DOUBLE),
    ("d + d", T("DECIMAL", 5, 2)), ("id / 2", INT), ("v + v", STRING), ("v || v", STRING),
    ("bt || bt", BYTES), ("-id", INT), ("-d", T("DECIMAL", 4, 2)),
    ("a[1]", INT), ("m['k']", DOUBLE), ("s->f", STRING), ("h[1]->value", BYTES), ("s->G", INT),
    ("id > 1", BOOLEAN), ("x = id", BOOLEAN), ("v < 'b'", BOOLEAN), ("ts > '2024-01-01'", BOOLEAN),
    ("dt = ts", BOOLEAN), ("b = true", BOOLEAN), ("a = a", BOOLEAN), ("s = s", BOOLEAN),
    ("id IS NULL", BOOLEAN), ("v LIKE 'a%'", BOOLEAN), ("id IN (1, 2, NULL)", BOOLEAN),
    ("id BETWEEN 1 AND 2.5", BOOLEAN), ("NOT b AND b OR b", BOOLEAN),
    ("CASE WHEN b THEN 1 ELSE 2.5 END", T("DECIMAL", 11, 1)), ("CASE id WHEN 1 THEN 'a' END", STRING),
    ("CASE WHEN b THEN NULL ELSE 'x' END", STRING),
    ("CAST(v AS INT)", INT), ("CAST(id AS DECIMAL(38, 2))", T("DECIMAL", 38, 2)), ("CAST(NULL AS STRING)", STRING),
    ("CAST(a AS STRING)", STRING), ("CAST(ts AS DATE)", T("DATE")),
    ("ABS(d)", T("DECIMAL", 4, 2)), ("ABS(id)", INT), ("ROUND(x)", BIGINT), ("ROUND(x, 2)", DOUBLE),
    ("SQRT(id)", DOUBLE), ("GREATEST(id, n, 2.5)", T("DECIMAL", 20, 1)), ("LEAST(v, 'a')", STRING),
    ("COALESCE(NULL, v)", STRING), ("IFNULL(id, n)", BIGINT), ("NULLIF(v, 'x')", STRING),
    ("CONCAT(v, v, 'x')", STRING), ("CONCAT(bt, bt)", BYTES), ("CONCAT_WS('-', v, v)", STRING),
    ("SUBSTRING(v, 2)", STRING), ("LEN(bt)", INT), ("SPLIT(v, ',')", T("ARRAY", element=STRING)),
    ("ARRAY_LENGTH(a)", INT), ("ARRAY_CONTAINS(a, 1)", BOOLEAN), ("MAP_KEYS(m)", T("ARRAY", element=STRING)),
    ("MAP_VALUES(m)", T("ARRAY", element=DOUBLE)), ("ARRAY(1, 2)", T("ARRAY", element=INT)),
    ("ARRAY(1, NULL, 2.5)", T("ARRAY", element=T("DECIMAL", 11, 1))),
    ("UNIX_TIMESTAMP()", BIGINT), ("UNIX_TIMESTAMP(ts)", BIGINT), ("FROM_UNIXTIME(ROWTIME)", T("TIMESTAMP")),
    ("FROM_UNIXTIME(id)", T("TIMESTAMP")), ("TIMESTAMPTOSTRING(ROWTIME, 'yyyy')", STRING),
    ("PARSE_TIMESTAMP(v, 'yyyy', 'UTC')", T("TIMESTAMP")), ("INT_FROM_BYTES(bt, 'LITTLE_ENDIAN')", INT),
    ("FROM_BYTES(bt, 'utf8')", STRING), ("TO_BYTES(v, 'hex')", BYTES),
    ("HEADERS_TO_MAP(h)", T("MAP", key=STRING, value=BYTES)), ("EXTRACTJSONFIELD(v, '$.a')", STRING),
    ("COUNT(*)", BIGINT), ("COUNT(v)", BIGINT), ("SUM(id)", INT), ("SUM(d)", T("DECIMAL", 4, 2)),
    ("AVG(id)", DOUBLE), ("MIN(v)", STRING), ("MAX(ts)", T("TIMESTAMP")), ("COLLECT_LIST(s)",
                                                                          T("ARRAY", element=COLUMNS["S"])),
    ("LATEST_BY_OFFSET(v)", STRING), ("COUNT_DISTINCT(v)", BIGINT),
    ("LATEST_BY_OFFSET(v, false)", STRING), ("LATEST_BY_OFFSET(id, 2)", T("ARRAY", element=INT)),
    ("EARLIEST_BY_OFFSET(v, 2, false)", T("ARRAY", element=STRING)),
])
def test_types_of_valid_expressions(text, expected):
    assert type_of(text) == expected


#: statement -> (line, column, ksqlDB's message).
KSQL_ERRORS = [
    ("SELECT * FROM s WHERE v", 1, 23,
     "Type error in WHERE expression: Should evaluate to boolean but is V (STRING) instead."),
    ("SELECT COUNT(*) FROM s GROUP BY v HAVING COUNT(*)", 1, 42,
     "Type error in HAVING expression: Should evaluate to boolean but is COUNT(*) (BIGINT) instead."),
    ("SELECT * FROM s WHERE id + 1", 1, 23,
     "Type error in WHERE expression: Should evaluate to boolean but is (ID + 1) (INTEGER) instead."),
    ("SELECT CAST(id AS DECIMAL(100, 2)) FROM s", 1, 19, "DECIMAL precision must be between 1 and 38: DECIMAL(100,2)"),
    ("SELECT CAST(id AS DECIMAL(2, 5)) FROM s", 1, 19, "DECIMAL precision must be >= scale: DECIMAL(2,5)"),
    ("SELECT CAST(a AS ARRAY<DECIMAL(0, 0)>) FROM s", 1, 24, "DECIMAL precision must be between 1 and 38: DECIMAL(0,0)"),
    ("SELECT CAST(v AS ARRAY<INT>) FROM s", 1, 8, "Cast of STRING to ARRAY<INTEGER> is not supported"),
    ("SELECT CAST(bt AS STRING) FROM s", 1, 8, "Cast of BYTES to STRING is not supported"),
    ("SELECT v[1] FROM s", 1, 8, "Subscript expression (V[1]) do not apply to STRING."),
    ("SELECT s['F'] FROM s", 1, 8,
     "Subscript expression (S['F']) do not apply to STRUCT<`F` STRING, `G` INTEGER>. "
     "Use the dereference operator for STRUCTS: S->'F'"),
    ("SELECT a['x'] FROM s", 1, 10, "Array index must be an INTEGER or BIGINT, but is 'x' (STRING)."),
    ("SELECT m[1] FROM s", 1, 10, "Map key must be STRING, but is 1 (INTEGER)."),
    ("SELECT v->f FROM s", 1, 8, "Can only dereference Struct type, instead got V (STRING)."),
    ("SELECT s->nope FROM s", 1, 8, "Could not find field 'NOPE' in 'S'."),
    ("SELECT ABS(v) FROM s", 1, 8, "Function 'ABS' does not accept parameters (STRING).\nValid alternatives are:\n"
     "ABS(INT val)\nABS(BIGINT val)\nABS(DOUBLE val)\nABS(DECIMAL val)"),
    ("SELECT GREATEST(v, id) FROM s", 1, 8, "Function 'GREATEST' does not accept parameters (STRING, INTEGER).\n"
     "Valid alternatives are:\nGREATEST(T val, T other, T... others)"),
    ("SELECT SUBSTRING(v) FROM s", 1, 8, "Function 'SUBSTRING' does not accept parameters (STRING).\n"
     "Valid alternatives are:\nSUBSTRING(STRING str, INT pos)\nSUBSTRING(STRING str, INT pos, INT length)"),
    ("SELECT SUM(v) FROM s GROUP BY id", 1, 8, "Function 'SUM' does not accept parameters (STRING).\n"
     "Valid alternatives are:\nSUM(INT col)\nSUM(BIGINT col)\nSUM(DOUBLE col)\nSUM(DECIMAL col)"),
    ("SELECT GREATEST(*) FROM s", 1, 8, "Function 'GREATEST' does not accept parameters ().\n"
     "Valid alternatives are:\nGREATEST(T val, T other, T... others)"),
    ("SELECT NOPE(v) FROM s", 1, 8, "Can't find any functions with the name 'NOPE'"),
    ("SELECT v + 1 FROM s", 1, 8, "Error processing expression: (V + 1). Unsupported arithmetic types. STRING INTEGER"),
    ("SELECT ts - 1 FROM s", 1, 8,
     "Error processing expression: (TS - 1). Unsupported arithmetic types. TIMESTAMP INTEGER"),
    ("SELECT id + NULL FROM s", 1, 8,
     "Error processing expression: (ID + NULL). Arithmetic on types INTEGER and null are not supported."),
    ("SELECT -v FROM s", 1, 8, "Error processing expression: -V. Unsupported arithmetic types. STRING"),
    ("SELECT v || id FROM s", 1, 8,
     "Error processing expression: (V || ID). Unsupported arithmetic types. STRING INTEGER"),
    ("SELECT v > 1 FROM s", 1, 8, "Cannot compare V (STRING) to 1 (INTEGER) with GREATER_THAN."),
    ("SELECT b < true FROM s", 1, 8, "Cannot compare B (BOOLEAN) to true (BOOLEAN) with LESS_THAN."),
    ("SELECT id = NULL FROM s", 1, 8,
     "Comparison with NULL not supported: INTEGER = NULL\nUse 'IS NULL' or 'IS NOT NULL' instead."),
    ("SELECT id IN (1, 'a') FROM s", 1, 18, "Cannot compare ID (INTEGER) to 'a' (STRING) with EQUAL."),
    ("SELECT id BETWEEN 'a' AND 2 FROM s", 1, 19,
     "Cannot compare ID (INTEGER) to 'a' (STRING) with GREATER_THAN_OR_EQUAL."),
    ("SELECT NOT v FROM s", 1, 8, "Not expression expects a boolean value.  Actual STRING"),
    ("SELECT b AND id FROM s", 1, 8, "Logical binary expects two boolean values.  Actual BOOLEAN and INTEGER"),
    ("SELECT id LIKE 'a' FROM s", 1, 8, "Type error in LIKE expression: ID (INTEGER) is not a STRING."),
    ("SELECT CASE WHEN v THEN 1 END FROM s", 1, 18, "WHEN operand type should be boolean.\nType for 'V' is STRING"),
    ("SELECT CASE WHEN b THEN 1 WHEN b THEN 'x' END FROM s", 1, 39,
     "Invalid Case expression. Type for all 'THEN' clauses should be the same.\n"
     "THEN expression 'WHEN B THEN 'x'' has type: STRING.\nPrevious THEN expression(s) type: INTEGER."),
    ("SELECT CASE WHEN b THEN 1 ELSE 'x' END FROM s", 1, 32,
     "Invalid Case expression. Type for the default clause should be the same as for 'THEN' clauses.\n"
     "THEN type: INTEGER.\nDEFAULT type: STRING."),
    ("SELECT CASE id WHEN 'a' THEN 1 END FROM s", 1, 21, "Cannot compare ID (INTEGER) to 'a' (STRING) with EQUAL."),
    ("SELECT ARRAY() FROM s", 1, 8, "Array constructor cannot be empty. Please supply at least one element "
     "(see https://github.com/confluentinc/ksql/issues/4239)."),
    ("SELECT ARRAY(NULL) FROM s", 1, 8, "Cannot construct an array with all NULL elements "
     "(see https://github.com/confluentinc/ksql/issues/4239). As a workaround, you may cast a NULL value to "
     "the desired type."),
    ("SELECT 123456789012345678901234567890123456789.5 FROM s", 1, 8,
     "Invalid numeric literal: 123456789012345678901234567890123456789.5"),
    ("SELECT nope FROM s", 1, 8, "SELECT column 'NOPE' cannot be resolved."),
    ("SELECT id FROM s WHERE nope > 1", 1, 24, "WHERE column 'NOPE' cannot be resolved."),
    ("SELECT COUNT(*) FROM s GROUP BY id HAVING nope > 1", 1, 43, "HAVING column 'NOPE' cannot be resolved."),
    ("SELECT COUNT(*) FROM s GROUP BY nope", 1, 33, "GROUP BY column 'NOPE' cannot be resolved."),
    ("SELECT id FROM s GROUP BY ABS(v)", 1, 27, "Function 'ABS' does not accept parameters (STRING).\n"
     "Valid alternatives are:\nABS(INT val)\nABS(BIGINT val)\nABS(DOUBLE val)\nABS(DECIMAL val)"),
    ("SELECT id FROM s PARTITION BY v + 1", 1, 31,
     "Error processing expression: (V + 1). Unsupported arithmetic types. STRING INTEGER"),
]


@pytest.mark.parametrize("statement, line, column, message", KSQL_ERRORS)
def test_ksql_type_errors(statement, line, column, message):
    error = error_of(statement)
    assert (error.reason, error.line, error.column) == (message, line, column)
    place = "Line: {}, Col: {}: " if "column '" in message else "line {}:{}: "  # ksqlDB's analyzer, its parser
    assert str(error).startswith(f"{place.format(line, column)}{message}\n{statement}\n")
    assert str(error).endswith(" " * (column - 1) + "^")


MATERIALIZE_ERRORS = [
    ("SELECT * FROM s WHERE v", "WHERE clause must have type boolean, not type text"),
    ("SELECT abs(v) FROM s", "function abs(text) does not exist"),
    ("SELECT nope(v) FROM s", "function nope(text) does not exist"),
    ("SELECT v + 1 FROM s", "operator does not exist: text + integer"),
    ("SELECT v > 1 FROM s", "operator does not exist: text > integer"),
    ("SELECT v + v FROM s", "operator does not exist: text + text"),
    ("SELECT '{1,x}'::int list FROM s",
     'invalid input syntax for type integer list: invalid input syntax for type integer: '
     'invalid digit found in string: "x": "{1,x}"'),
    ("SELECT '{a=>1'::map[text=>int] FROM s", 'invalid input syntax for type map[text=>integer]: '
     'unexpected end of input: "{a=>1"'),
    ("SELECT '{{t},{maybe}}'::bool list list FROM s",
     'invalid input syntax for type boolean list list: invalid input syntax for type boolean: "maybe": '
     '"{{t},{maybe}}"'),
    ("SELECT NOT v FROM s", "NOT argument must have type boolean, not type text"),
    ("SELECT v::numeric(40, 2) FROM s", "precision for type numeric must be between 1 and 38, inclusive"),
    ("SELECT nope FROM s", 'column "nope" does not exist'),
]


@pytest.mark.parametrize("statement, message", MATERIALIZE_ERRORS)
def test_materialize_type_errors(statement, message):
    columns = {name.lower(): t for name, t in COLUMNS.items()}
    assert error_of(statement, "materialize", columns).reason == message


def test_a_quoted_literal_cast_to_a_list_or_map_is_read_as_its_text_in_materialize_only():
    columns = {name.lower(): t for name, t in COLUMNS.items()}
    text = "SELECT '{1, NULL}'::int list, '{{a},{}}'::text list list, '{k=>1.5}'::map[text=>double] FROM s"
    assert check_select(parse_statement(text, dialect="materialize"), columns, "materialize").items == (
        T("ARRAY", element=INT), T("ARRAY", element=T("ARRAY", element=STRING)), T("MAP", key=STRING, value=DOUBLE))
    assert error_of("SELECT CAST('[1]' AS ARRAY<INT>) FROM s").reason.startswith("Cast of STRING to ARRAY")


def test_a_text_column_cast_to_a_list_or_map_is_read_at_run_time_in_materialize_only():
    columns = {name.lower(): t for name, t in COLUMNS.items()}
    text = "SELECT v::int list, v::map[text=>int] FROM s"
    assert check_select(parse_statement(text, dialect="materialize"), columns, "materialize").items == (
        T("ARRAY", element=INT), T("MAP", key=STRING, value=INT))
    assert error_of("SELECT CAST(V AS ARRAY<INT>) FROM s").reason.startswith("Cast of STRING to ARRAY")
    assert error_of("SELECT v::int list list FROM s", "materialize", {"v": INT}).reason == (
        "CAST does not support casting from integer to integer list list")


def test_an_ambiguous_column_in_materialize_is_postgres_ambiguous_reference():
    columns = {"a.id": INT, "b.id": INT}
    error = error_of("SELECT id FROM a JOIN b ON a.id = b.id", "materialize", columns)
    assert (error.reason, str(error).split("\n")[0]) == ('column reference "id" is ambiguous',
                                                         'line 1:8: column reference "id" is ambiguous')


def test_materialize_compares_with_null_and_casts_booleans_as_postgres_does():
    statement = parse_statement("SELECT b::int, id::boolean FROM s WHERE id = NULL", dialect="materialize")
    assert check_select(statement, {"id": INT, "b": BOOLEAN}, "materialize").items == (INT, BOOLEAN)
    with pytest.raises(ExpressionTypeError, match="Cast of BOOLEAN to INTEGER is not supported"):
        check_select(parse_statement("SELECT CAST(b AS INT) FROM s"), {"B": BOOLEAN})


def test_join_columns_qualified_and_ambiguous():
    columns = {"A.ID": INT, "A.V": STRING, "B.ID": BIGINT, "B.W": STRING}
    statement = parse_statement("SELECT a.id + b.id, w FROM a JOIN b WITHIN 1 SECOND ON a.id = b.id")
    assert check_select(statement, columns).items == (BIGINT, STRING)
    assert error_of("SELECT id FROM a JOIN b ON a.id = b.id", columns=columns).reason == \
        "Column 'ID' is ambiguous. Could be A.ID or B.ID."
    assert error_of("SELECT c.id FROM a JOIN b ON a.id = b.id", columns=columns).reason == \
        "'C' is not a valid stream/table name or alias."
    assert error_of("SELECT v FROM a JOIN b ON a.v", columns=columns).reason == \
        "Type error in ON expression: Should evaluate to boolean but is A.V (STRING) instead."


def test_a_joined_source_is_named_by_its_alias_or_its_name():
    columns = {"O.ITEM": STRING, "O.QTY": INT, "I.ITEM": STRING}
    statement = parse_statement("SELECT orders.qty, o.qty FROM orders o JOIN items AS i ON orders.item = i.item")
    assert check_select(statement, columns).items == (INT, INT)
    assert error_of("SELECT item FROM orders o JOIN items AS i ON o.item = i.item", columns=columns).reason == \
        "Column 'ITEM' is ambiguous. Could be I.ITEM or O.ITEM."


def test_sub_expression_types_are_kept_for_the_planner():
    statement = parse_statement("SELECT v + v, id / 2 FROM s WHERE n > 1")
    found = check_select(statement, COLUMNS)
    concat, division = (i.expr for i in statement.items)
    assert [found.checker.type_of(e) for e in (concat.left, concat.right, division.left, division.right)] == \
        [STRING, STRING, INT, INT]
    assert found.checker.types[id(statement.where.left)] == BIGINT


def test_columns_resolve_ignoring_case_across_dialects():
    assert check_expression(ast.ColumnRef("ID"), {"id": INT}) == INT  # ksql's unquoted id, a Materialize column
    assert check_expression(ast.ColumnRef("id"), {"ID": INT}, "materialize") == INT
    with pytest.raises(ExpressionTypeError, match=r"^Column 'id' cannot be resolved\.$"):
        check_expression(ast.ColumnRef("id"), {"ID": INT})  # ksql's quoted "id" is not ID
    with pytest.raises(ExpressionTypeError, match=r"^Column 's\.X' cannot be resolved\.$"):
        check_expression(ast.ColumnRef("X", "s"), {"ID": INT})
    assert check_expression(ast.ColumnRef("ID", "s"), {"ID": INT}) == INT  # one source: the planner checks `s`


def test_window_bounds_are_visible_in_windowed_queries():
    statement = parse_statement("SELECT WINDOWSTART, COUNT(*) FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY v")
    assert check_select(statement, COLUMNS).items == (BIGINT, BIGINT)


def test_declared_types_are_checked():
    check_type(T("DECIMAL", 38, 38))
    with pytest.raises(ExpressionTypeError, match=r"DECIMAL precision must be between 1 and 38: DECIMAL\(100,200\)"):
        check_type(T("MAP", key=STRING, value=T("DECIMAL", 100, 200)))


def test_every_function_has_a_signature_and_unknown_ones_say_so():
    functions = pytest.importorskip("kafkasql_magic.engine.functions.catalogue_spark", reason="functions need pyspark")
    assert set(functions.FUNCTIONS) == set(signatures.SCALAR)
    assert set(SIGNATURES) == set(signatures.AGGREGATE)


def test_signature_arity_matches_the_function_table():
    functions = pytest.importorskip("kafkasql_magic.engine.functions.catalogue_spark", reason="functions need pyspark")
    for name, fn in functions.FUNCTIONS.items():
        arities = {len(s.params) for s in signatures.SIGNATURES[name] if not s.variadic}
        variadic = [s for s in signatures.SIGNATURES[name] if s.variadic]
        low = min(list(arities) + [len(s.params) - 1 for s in variadic])
        assert low >= fn.min_args, name
        if fn.max_args is not None:
            assert not variadic and max(arities) <= fn.max_args, name


def test_the_deepest_statement_the_parser_allows_checks_without_recursion_errors():
    from kafkasql_magic.sql.parser import MAX_NESTING

    text = "SELECT " + "ABS(" * (MAX_NESTING - 10) + "id" + ")" * (MAX_NESTING - 10) + " FROM s"
    assert check_select(parse_statement(text), COLUMNS).items == (INT,)
    text = "SELECT " + " + ".join(["id"] * (MAX_NESTING - 10)) + " FROM s"
    assert check_select(parse_statement(text), COLUMNS).items == (INT,)


def test_type_errors_are_user_errors():
    assert issubclass(ExpressionTypeError, KStreamError)


def test_the_rest_of_ksqldbs_scalar_functions_are_typed_and_built():
    from kafkasql_magic.engine.functions import catalogue_spark as functions
    from kafkasql_magic.typecheck import signatures

    assert set(signatures.SCALAR) == set(functions.FUNCTIONS)
    from kafkasql_magic.sql import parse_statement
    from kafkasql_magic.typecheck import check_expression

    def type_of(text, columns):
        return check_expression(parse_statement(f"SELECT {text} FROM s;").items[0].expr, columns)

    cols = {"TS": ast.Type("TIMESTAMP"), "D": ast.Type("DATE"), "N": ast.Type("INT")}
    assert type_of("TIMESTAMPADD(HOURS, n, ts)", cols) == ast.Type("TIMESTAMP")
    assert type_of("DATEADD(DAYS, 1, d)", cols) == ast.Type("DATE")
    assert type_of("GEO_DISTANCE(1, 2, 3.5, n, 'km')", cols) == ast.Type("DOUBLE")
    assert type_of("SPLIT_TO_MAP('a=1', ';', '=')", cols) == ast.Type("MAP", key=ast.Type("STRING"),
                                                                         value=ast.Type("STRING"))
    with pytest.raises(ExpressionTypeError, match="Function 'DATEADD' does not accept parameters"):
        type_of("DATEADD(DAYS, 1, ts)", cols)
    with pytest.raises(ExpressionTypeError):
        type_of("TIMESTAMPADD(FORTNIGHTS, 1, ts)", cols)  # not a unit: a column that does not exist


def test_an_unknown_column_error_suggests_the_nearest_names():
    from kafkasql_magic.errors import ExpressionTypeError
    from kafkasql_magic.sql import ast
    from kafkasql_magic.typecheck.checker import Checker

    checker = Checker({"QTY": ast.Type("INTEGER"), "ITEM": ast.Type("STRING"), "o.PRICE": ast.Type("DOUBLE")})
    with pytest.raises(ExpressionTypeError) as info:
        checker.type_of(ast.ColumnRef("PRCE"))
    assert str(info.value) == "Column 'PRCE' cannot be resolved." and info.value.hint == "Did you mean PRICE?"
    with pytest.raises(ExpressionTypeError) as info:
        checker.type_of(ast.ColumnRef("ZZZ"))
    assert info.value.hint is None


def test_unnest_is_typed_as_its_lists_elements():
    from kafkasql_magic.sql import parse_statement
    from kafkasql_magic.typecheck.checker import Checker

    stmt = parse_statement("SELECT unnest(LIST[1, 2]) * 10, unnest(LIST['a']) || 'b'", dialect="materialize")
    checker = Checker({}, "materialize", None, None, frozenset({"UNNEST"}))
    assert [checker.type_of(item.expr).name for item in stmt.items] == ["INT", "STRING"]


@pytest.mark.parametrize("text", [
    "SELECT ID, V AS SOMETHING FROM s PARTITION BY SOMETHING",  # partition-by.json: an output name
    "SELECT V + '_new' AS ID_NEW FROM s PARTITION BY ID_NEW",
])
def test_partition_by_resolves_on_the_input_with_ksqldbs_message(text):
    name = text.rsplit(" ", 1)[1]
    with pytest.raises(ExpressionTypeError) as info:
        check_select(parse_statement(text), COLUMNS)
    assert str(info.value).endswith(f"PARTITION BY column '{name}' cannot be resolved. '{name}' must be a column "
                                    "in the source schema since PARTITION BY is applied on the input.")
