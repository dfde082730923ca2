"""Materialize's writable tables, the pure rules: CREATE TABLE as a catalog entry, the rows an
INSERT writes, the checks of UPDATE's assignments, Materialize's (PostgreSQL's) messages.

A writable table is an upsert changelog in a topic of its own: each row has a hidden row id
(a UUID, the record key, text), the record value is the row (JSON, one member per column) and
a deletion is a tombstone. So the catalog entry is an ENVELOPE UPSERT source whose key has no
column: the id keys the changelog (the engine's upsert machinery keys by the record's key
bytes) but is in no `SELECT *`, SHOW COLUMNS or sink; two equal rows are two ids.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from ..catalog import VALUE, Column, SourceDef
from ..errors import StatementError
from ..formats import FormatSpec
from ..sql import ast, collection_text
from ..sql import ast_materialize as mz_ast
from ..sql import ast_tables as tables
from .custom_types import TYPE_WORDS, USES, names_in, resolve, type_word
from .materialize_sinks import qualified
from .naming import MATERIALIZE

#: SourceDef.properties marker of a writable table (its topic is its own: DROP TABLE deletes it).
WRITABLE = "WRITABLE TABLE"
#: ... and of a constant relation's hidden table (statements/constants.py: not listed by SHOW).
CONSTANT = "CONSTANT"

NUMERIC = ("INT", "BIGINT", "DOUBLE", "DECIMAL")
#: ... and the collections a column may hold them in (a map's keys are text, as in Materialize)
COLLECTIONS = ("ARRAY", "MAP")
_INT_RANGE = {"INT": range(-(2**31), 2**31), "BIGINT": range(-(2**63), 2**63)}


def topic_for(name: str, service_id: str | None, token: str) -> str:
    """The table's changelog topic: fixed under a service id (a restart finds it again), else
    unique to this session (`token`)."""
    return f"_kafkasql_{service_id}_table_{name}" if service_id else f"_kafkasql_table_{token}_{name}"


def table_def(stmt: tables.CreateTable, topic: str, text: str = "", types=None) -> SourceDef:
    """The catalog entry of CREATE TABLE name (column type, ...); `types` the custom types
    (dialects/custom_types.py) a column may name."""
    MATERIALIZE.check_unique(c.name for c in stmt.columns)
    columns = tuple(Column(c.name, resolve(c.type, types or {}), VALUE) for c in stmt.columns)
    for column in columns:
        _check_type(stmt.name, column.name, column.type)
    uses = tuple(dict.fromkeys(n for c in stmt.columns for n in names_in(c.type)))
    return SourceDef("TABLE", stmt.name, topic, FormatSpec("NONE"), FormatSpec("JSON"), columns, statement=text,
                     properties={WRITABLE: True, USES: uses}, envelope="UPSERT", dialect="materialize")


def _check_type(table: str, column: str, type_: ast.Type) -> None:
    if type_.name == "MAP" and type_.key.name != "STRING":
        raise StatementError(f"map key type must be text, got {type_word(type_.key)}")
    if type_.name in COLLECTIONS or type_.name == "STRUCT":
        for inner in (type_.element, type_.value, *(t for _, t in type_.fields)):
            if inner is not None:
                _check_type(table, column, inner)
    elif type_.name not in TYPE_WORDS:
        raise StatementError(f'CREATE TABLE {table}: column "{column}" has type {type_.name.lower()}, which a '
                             f"writable table does not take yet (it takes {', '.join(sorted(set(TYPE_WORDS.values())))}"
                             ", and lists, maps and records of them)")


def is_writable(source) -> bool:
    return isinstance(source, SourceDef) and bool(source.properties.get(WRITABLE))


def target(catalog, name: str) -> SourceDef:
    """The writable table `name` (Materialize's message for an unknown one or another kind)."""
    try:
        source = catalog.get(name, "materialize")
    except StatementError:
        raise StatementError(f"unknown catalog item '{name}'") from None
    if not is_writable(source):
        kind = getattr(source, "kind", "source").lower()
        raise StatementError(f"cannot insert into, update or delete from {kind} {qualified(source.name)}: "
                             "only tables made with CREATE TABLE name (column type, ...) are writable")
    return source


def column_of(table: SourceDef, name: str) -> Column:
    for column in table.columns:
        if column.name == name:
            return column
    raise StatementError(f'column "{name}" of relation {qualified(table.name)} does not exist')


def rows_to_insert(stmt: tables.InsertRows, table: SourceDef, types=None) -> list[list]:
    """Each VALUES row as the table's row (values in column order; a column not named is NULL);
    a cast may name a custom type of `types`."""
    named = [column_of(table, n) for n in stmt.columns] if stmt.columns else list(table.columns)
    rows = []
    for values in stmt.rows:
        if len(values) > len(named):
            raise StatementError("INSERT has more expressions than target columns")
        if stmt.columns and len(values) < len(named):
            raise StatementError("INSERT has more target columns than expressions")
        given = {c.name: constant(with_types(v, types or {}), c) for c, v in zip(named, values)}
        rows.append([given.get(c.name) for c in table.columns])
    return rows


def with_types(expr: ast.Expr, types) -> ast.Expr:
    """A VALUES entry with the custom types its casts name resolved."""
    if isinstance(expr, ast.Cast):
        return replace(expr, operand=with_types(expr.operand, types), type=resolve(expr.type, types))
    if isinstance(expr, ast.FunctionCall):
        return replace(expr, args=tuple(with_types(a, types) for a in expr.args))
    if isinstance(expr, mz_ast.MapLiteral):
        return replace(expr, entries=tuple((with_types(k, types), with_types(v, types)) for k, v in expr.entries))
    return expr


def constant(expr: ast.Expr, column: Column):
    """A VALUES entry as the column's value: a literal, `-` a number, `'text'::type`
    (a quoted literal is of unknown type, as in PostgreSQL: it is read as the column's type),
    for a list, map or record column `LIST[...]` / `MAP[k => v, ...]` / `ROW(...)` of such
    constants, which may be cast to the column's type."""
    if isinstance(expr, ast.Cast) and (isinstance(expr.operand, ast.Literal) and expr.operand.kind == "STRING"
                                       or _constructor(expr.operand)):
        return constant(expr.operand, Column(column.name, expr.type)) if expr.type == column.type else \
            _refused(column, expr.type)
    if _constructor(expr):
        return _collection(expr, column)
    if isinstance(expr, ast.UnaryOp) and expr.op == "-" and isinstance(expr.operand, ast.Literal) \
            and expr.operand.kind in ("INT", "BIGINT", "DECIMAL", "DOUBLE"):
        literal = expr.operand
        return convert(-(Decimal(literal.value) if literal.kind == "DECIMAL" else literal.value), literal.kind, column)
    if isinstance(expr, ast.Literal):
        value = Decimal(expr.value) if expr.kind == "DECIMAL" else expr.value
        return convert(value, expr.kind, column)
    where = f" (line {expr.line}:{expr.column})" if expr.line else ""
    raise StatementError(f"INSERT INTO a table takes constant values here: a literal, a negative number or "
                         f"'text'::type{where}")


def _constructor(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.FunctionCall) and expr.name in ("ARRAY", "ROW") or isinstance(expr, mz_ast.MapLiteral)


def _collection(expr, column: Column):
    """LIST[...], MAP[...] or ROW(...) as the list, map or record column's value, each entry a
    constant of its type (a record as an object of its fields)."""
    want = column.type
    if isinstance(expr, ast.FunctionCall) and expr.name == "ROW":
        if want.name != "STRUCT" or len(expr.args) != len(want.fields):
            return _refused(column, _kind_of(expr))
        return {name: constant(arg, Column(column.name, t)) for (name, t), arg in zip(want.fields, expr.args)}
    if isinstance(expr, ast.FunctionCall):
        if want.name != "ARRAY":
            return _refused(column, _kind_of(expr))
        return [constant(item, Column(column.name, want.element)) for item in expr.args]
    if want.name != "MAP":
        return _refused(column, _kind_of(expr))
    found = {}
    for key, value in expr.entries:
        found[constant(key, Column(column.name, want.key))] = constant(value, Column(column.name, want.value))
    return found


def convert(value, kind: str, column: Column):
    """A literal of `kind` (ast.Literal kinds) as a value of `column`'s type."""
    want = column.type.name
    if value is None:
        return None
    if kind == "STRING":
        return _from_text(value, column)
    if kind == "BOOLEAN":
        return value if want == "BOOLEAN" else _refused(column, kind)
    if want not in NUMERIC:
        return _refused(column, kind)
    if want in _INT_RANGE:
        number = int(Decimal(value).to_integral_value()) if kind in ("DECIMAL", "DOUBLE") else int(value)
        if number not in _INT_RANGE[want]:
            raise StatementError(f"{TYPE_WORDS[want]} out of range")
        return number
    return float(value) if want == "DOUBLE" else Decimal(str(value))


def _from_text(text: str, column: Column):
    """PostgreSQL's input of a quoted literal for the column's type."""
    want = column.type.name
    try:
        if want in collection_text.TEXT_FORMS:
            return _collection_text(text, column)
        if want == "STRING":
            return text
        if want in ("INT", "BIGINT"):
            return convert(int(text.strip()), "INT", column)
        if want == "DOUBLE":
            return float(text)
        if want == "DECIMAL":
            return Decimal(text.strip())
        if want == "BOOLEAN":
            word = text.strip().lower()
            if word in ("t", "true", "yes", "on", "1"):
                return True
            if word in ("f", "false", "no", "off", "0"):
                return False
            raise ValueError(text)
        if want == "DATE":
            return dt.date.fromisoformat(text.strip())
        if want == "TIMESTAMP":
            return dt.datetime.fromisoformat(text.strip())
        if want == "BYTES":
            return text.encode()
    except (ValueError, InvalidOperation):
        pass
    raise StatementError(f'invalid input syntax for type {type_word(column.type)}: "{text}"')


def _collection_text(text: str, column: Column):
    """A list's, map's or record's text form (`{1,2}`, `{a=>1}`, `(1,x)`); what is wrong with
    it, as Materialize words it: `invalid input syntax for type integer list: <detail>: "<text>"`."""
    try:
        return collection_text.parse(text, column.type, lambda word, t: _from_text(word, Column(column.name, t)))
    except (ValueError, StatementError) as exc:
        raise StatementError(f'invalid input syntax for type {type_word(column.type)}: {exc}: "{text}"') from None


def _refused(column: Column, kind: str | ast.Type):
    raise StatementError(mismatch(column, kind))


def mismatch(column: Column, expression_type: str | ast.Type) -> str:
    """Materialize's message for a value of the wrong type for a column (INSERT, UPDATE)."""
    found = type_word(expression_type if isinstance(expression_type, ast.Type) else ast.Type(expression_type))
    return f'column "{column.name}" is of type {type_word(column.type)} but expression is of type {found}'


def assignable(column: Column, expression_type: str | None) -> bool:
    """Whether UPDATE may store a value of `expression_type` (None: NULL) in `column`:
    the same type, or numbers into a number (PostgreSQL's assignment casts)."""
    want = column.type.name
    return expression_type is None or expression_type == want or (want in NUMERIC and expression_type in NUMERIC)


#: How literal kinds widen when VALUES rows mix them (PostgreSQL's numeric category).
_WIDER = ("INT", "BIGINT", "DECIMAL", "DOUBLE")


def values_columns(rows) -> list[tuple[str, ast.Type]]:
    """The columns of VALUES rows: column1, column2, ... each of the type its values share
    (numbers widen; a quoted literal takes the others' type; only NULLs or quoted literals:
    text), or Materialize's message when two rows' types cannot be matched."""
    columns = []
    for index in range(len(rows[0])):
        found: ast.Type | None = None
        for row in rows:
            kind = _kind_of(row[index])
            if kind is None:
                continue
            if found is None or found.name == kind.name:
                found = found or kind
            elif found.name in _WIDER and kind.name in _WIDER:
                found = max(found, kind, key=lambda t: _WIDER.index(t.name))
            else:
                raise StatementError(f"VALUES types {TYPE_WORDS.get(found.name, found.name.lower())} and "
                                     f"{TYPE_WORDS.get(kind.name, kind.name.lower())} cannot be matched")
        columns.append((f"column{index + 1}", found or ast.Type("STRING")))
    return columns


def _kind_of(expr: ast.Expr) -> ast.Type | None:
    """A VALUES entry's type; None for NULL and quoted literals (their type comes from the others;
    a list's or map's of such entries: text, as Materialize reads them)."""
    if isinstance(expr, ast.Cast):
        return expr.type
    if isinstance(expr, ast.FunctionCall) and expr.name == "ARRAY":
        return ast.Type("ARRAY", element=_first_kind(expr.args))
    if isinstance(expr, mz_ast.MapLiteral):
        return ast.Type("MAP", key=ast.Type("STRING"), value=_first_kind(v for _, v in expr.entries))
    if isinstance(expr, ast.FunctionCall) and expr.name == "ROW":
        return ast.Type("STRUCT", fields=tuple((f"f{i + 1}", _first_kind([a])) for i, a in enumerate(expr.args)))
    if isinstance(expr, ast.UnaryOp):
        return _kind_of(expr.operand)
    if isinstance(expr, ast.Literal) and expr.kind not in ("NULL", "STRING"):
        return ast.Type(expr.kind)
    return None


def _first_kind(entries) -> ast.Type:
    return next((k for k in map(_kind_of, entries) if k is not None), ast.Type("STRING"))
