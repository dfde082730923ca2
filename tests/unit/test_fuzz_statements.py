"""Fuzzing: mutated real statements must fail, if they fail, with the project's user error.

The corpus is every statement the tests, the notebooks, the README and the docs/ pages use.
Hypothesis mutates them (tokens deleted, duplicated, swapped or replaced by keywords, operators,
huge literals; spans wrapped in deep nesting), parses each in both dialects, type-checks every query that
parses against a small set of typed columns, plans it (the analysis step, no Spark) against a
catalog of every source the corpus declares, and validates every CREATE that parses as the
session would. Any exception that is not a `KStreamError` fails the test. The run is
derandomized (the same examples on every machine) and bounded to about a minute.
"""

from __future__ import annotations

import ast as pyast
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkasql_magic import dialects
from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import SourceContext
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.errors import KStreamError, SqlSyntaxError, StatementError
from kafkasql_magic.sql import ast, parse, reserved_words, split_statements
from kafkasql_magic.typecheck import check_select, check_type

ROOT = Path(__file__).resolve().parents[2]
STATEMENT_START = re.compile(r"^\s*(SELECT|CREATE|INSERT|SUBSCRIBE|DESCRIBE|SHOW|DROP|PRINT|EXPLAIN|SET|DEFINE)\b",
                             re.IGNORECASE)


def _from_python(path: Path) -> list[str]:
    texts = []
    for node in pyast.walk(pyast.parse(path.read_text())):
        if isinstance(node, pyast.Constant) and isinstance(node.value, str) and STATEMENT_START.match(node.value):
            texts.append(node.value)
    return texts


def _from_notebook(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [body for c in cells for body in ["".join(c["source"])] if body.startswith("%%kstream")
            for body in [body.split("\n", 1)[1] if "\n" in body else ""]]


def _from_markdown(path: Path) -> list[str]:
    return re.findall(r"```sql\n(.*?)```", path.read_text(), re.DOTALL)


def corpus() -> list[str]:
    texts = [t for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != Path(__file__).name
             for t in _from_python(p)]
    texts += [t for p in sorted((ROOT / "notebooks").glob("*.ipynb")) for t in _from_notebook(p)]
    texts += [t for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] for t in _from_markdown(p)]
    statements = []
    for text in texts:
        try:
            statements += [s.text for s in split_statements(text)]
        except KStreamError:
            statements.append(text)
    return sorted(set(statements))


CORPUS = corpus()

TOKEN = re.compile(r"'(?:[^']|'')*'|`[^`]*`|\"[^\"]*\"|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\w+|->|<>|!=|<=|>=|\|\||::|=>|\S")
VOCABULARY = (
    "SELECT FROM WHERE GROUP BY HAVING PARTITION EMIT CHANGES LIMIT JOIN ON WITHIN WINDOW TUMBLING HOPPING "
    "SIZE ADVANCE CASE WHEN THEN ELSE END CAST AS AND OR NOT IS NULL IN BETWEEN LIKE ESCAPE TRUE FALSE "
    "ARRAY MAP STRUCT DECIMAL INT BIGINT STRING BYTES TIMESTAMP ABS SUM COUNT ARRAY_LENGTH NOPE "
    "( ) [ ] , ; * + - / % || -> = <> < <= > >= :: . ID V X N A M S ROWTIME WINDOWSTART"
).split() + ["99999999999999999999999999999", "1e999", "123456789012345678901234567890123456789.5",
             "0", "-1", "''", "'x'", "DECIMAL(100, 2)", "DECIMAL(0, 0)", "99999999999 DAYS", "0 SECONDS",
             # Materialize's operators, casts and map literals; a byte order computed per record
             "=>", "->>", "#>", "#>>", "MAP[", "MAP['k' => ID]", "MAP[V => MAP['x' => X]]", "MAP[]", "::text",
             "::map[text=>int]", "'{a,-1}'", "SUBSCRIBE", "INT_FROM_BYTES(TO_BYTES(V, 'hex'), V)"]

T = ast.Type
COLUMNS = {
    "ID": T("INT"), "N": T("BIGINT"), "X": T("DOUBLE"), "V": T("STRING"), "B": T("BOOLEAN"), "D": T("DECIMAL", 4, 2),
    "A": T("ARRAY", element=T("INT")), "M": T("MAP", key=T("STRING"), value=T("DOUBLE")),
    "S": T("STRUCT", fields=(("F", T("STRING")),)), "ROWTIME": T("BIGINT"), "ROWOFFSET": T("BIGINT"),
}


ATOM = re.compile(r"'|\d|[A-Za-z_]")
NOT_OPERANDS = reserved_words("ksql") | reserved_words("materialize") | {
    "STREAM", "TABLE", "SOURCE", "VIEW", "TOPIC", "KEY", "HEADERS", "HEADER", "BY"}
NAMED_BY = {"FROM", "JOIN", "STREAM", "TABLE", "AS", "INTO", "SOURCE", "VIEW", "EXISTS", "DESCRIBE"}


def _operand(tokens: list[str], k: int) -> bool:
    """Whether token k looks like an operand: a literal or a column name, not a keyword or a
    source name."""
    token = tokens[k]
    return bool(ATOM.match(token)) and token.upper() not in NOT_OPERANDS \
        and (k == 0 or tokens[k - 1].upper() not in NAMED_BY) and (k + 1 == len(tokens) or tokens[k + 1] != "(")
NESTINGS = [("(", ")"), ("ABS(", ")"), ("NOT ", ""), ("- ", ""), ("CASE WHEN TRUE THEN ", " END"),
            ("ARRAY(", ")[1]"), ("(1 + ", ")"), ("CAST(", " AS STRING)")]


def _parses(text: str) -> bool:
    for dialect in ("ksql", "materialize"):
        try:
            parse(text, dialect=dialect)
            return True
        except KStreamError:
            pass
    return False


VALID = [s for s in CORPUS if _parses(s)]


@st.composite
def mutated(draw) -> str:
    """A corpus statement with one to three token mutations."""
    tokens = TOKEN.findall(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        if not tokens:
            tokens = [draw(st.sampled_from(VOCABULARY))]
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "replace"]))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens[i:i + (op == "replace")] = [draw(st.sampled_from(VOCABULARY))]
    return " ".join(tokens)


@st.composite
def nested(draw) -> str:
    """A statement that parses, with one operand wrapped in shallow to absurd nesting."""
    tokens = TOKEN.findall(draw(st.sampled_from(VALID)))
    operands = [k for k in range(len(tokens)) if _operand(tokens, k)]
    if operands:
        k = operands[draw(st.integers(0, len(operands) - 1))]
        depth = draw(st.sampled_from([1, 3, 60, 140, 400]))
        opening, closing = draw(st.sampled_from(NESTINGS))
        tokens[k] = opening * depth + tokens[k] + closing * depth
    return " ".join(tokens)


def queries(statement: ast.Statement) -> list[ast.Select]:
    if isinstance(statement, ast.Select):
        return [statement]
    inner = [getattr(statement, name, None) for name in ("query", "statement")]
    return [q for s in inner if s is not None for q in queries(s)]


def columns_for(select: ast.Select) -> dict[str, ast.Type]:
    """The catalog's columns, also under every source name and alias of a join (a subquery in
    FROM has only its alias)."""
    if not select.joins:
        return COLUMNS
    refs = [select.source] + [j.source for j in select.joins]
    return {f"{q}.{n}": t for r in refs for q in {getattr(r, "name", None), r.alias} - {None}
            for n, t in COLUMNS.items()}


def _no_registry(*_args, **_kw):
    raise StatementError("no schema registry in the fuzz test")


def define(statement: ast.Statement, dialect: str, text: str):
    """The catalog entry a CREATE declares, as the session validates it (no registry, no
    connections), or None for other statements."""
    rules = dialects.get(dialect)
    if type(statement) not in rules.source_statements:
        return None
    context = SourceContext({ddl.DEFAULT_KEY_FORMAT: "KAFKA"}, None, text, infer=_no_registry,
                            latest_schema=_no_registry, connection=_no_registry)
    return rules.define_source(statement, context)


def corpus_catalog() -> Catalog:
    """Every source the corpus declares that validates without a registry (the first of a name)."""
    catalog = Catalog()
    for text in CORPUS:
        for dialect in ("ksql", "materialize"):
            try:
                for statement in parse(text, dialect=dialect):
                    source = define(statement, dialect, text)
                    if source is not None:
                        catalog.add(source, if_not_exists=True)
            except KStreamError:
                pass
    return catalog


CATALOG = corpus_catalog()


def check(text: str) -> None:
    for dialect in ("ksql", "materialize"):
        try:
            statements = parse(text, dialect=dialect)
        except KStreamError:
            continue
        for statement in statements:
            for step in (lambda: define(statement, dialect, text), lambda: _check_columns(statement, dialect)):
                try:
                    step()
                except KStreamError:
                    pass
            for select in queries(statement):
                for step in (lambda: check_select(select, columns_for(select), dialect, text),
                             lambda: analyse(select, CATALOG, dialect, text)):
                    try:
                        step()
                    except KStreamError:
                        pass


def _check_columns(statement: ast.Statement, dialect: str) -> None:
    for column in getattr(statement, "columns", ()):
        if isinstance(column, ast.ColumnDef):
            check_type(column.type, dialect)


def test_the_corpus_is_real():
    assert len(CORPUS) > 200 and len(VALID) > 200
    assert any(s.upper().startswith("CREATE SOURCE") for s in CORPUS)
    assert len(list(CATALOG)) > 20, "the catalog the mutated queries are planned against is nearly empty"


def test_the_corpus_queries_plan_against_the_catalog():
    """Many unmutated queries plan against the corpus catalog: mutated ones reach the planner's
    checks, not only 'does not exist'."""
    planned = failed = 0
    for text in VALID:
        for dialect in ("ksql", "materialize"):
            try:
                selects = [q for st in parse(text, dialect=dialect) for q in queries(st)]
            except KStreamError:
                continue
            for select in selects:
                try:
                    analyse(select, CATALOG, dialect, text)
                    planned += 1
                except KStreamError:
                    failed += 1
    assert planned > 150, (planned, failed)


@pytest.mark.parametrize("dialect", ["ksql", "materialize"])
@pytest.mark.parametrize("text", ["SELECT " + "NOT " * 2000 + "b FROM s",
                                  "SELECT " + "(1 + " * 3000 + "1" + ")" * 3000 + " FROM s",
                                  "SELECT " + "+".join(["1"] * 5000) + " FROM s"])
def test_absurd_nesting_is_a_syntax_error(text, dialect):
    with pytest.raises(SqlSyntaxError, match="Expressions nest too deeply"):
        parse(text, dialect=dialect)


@settings(max_examples=2000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(mutated(), nested()))
def test_mutated_statements_fail_only_with_user_errors(text):
    check(text)
