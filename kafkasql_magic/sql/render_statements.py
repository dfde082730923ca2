"""AST statement -> text in its dialect's syntax: ksql statements as ksqlDB writes them (one
line), Materialize's in Materialize's (render_materialize.py). One function per statement class
in a table keyed by AST class, as render.py does for expressions; `render_statement(stmt,
dialect)` is the entry. Secrets never show: a secret's value, a secret property's value and a
URL's credentials are written masked (redact.py), so the text is safe to display or log."""

from __future__ import annotations

from .. import redact
from . import ast
from .parser import KSQL
from .render import ExpressionWriter

__all__ = ["StatementWriter", "KsqlWriter", "KSQL_WRITER", "render_statement", "duration", "quoted", "if_exists",
           "if_not_exists"]

#: Duration units, largest first: a duration is written in the largest unit that divides it.
UNITS = (("DAYS", 86_400_000), ("HOURS", 3_600_000), ("MINUTES", 60_000), ("SECONDS", 1000), ("MILLISECONDS", 1))


def duration(ms: int) -> str:
    """`90000` -> `90 SECONDS`; `3600000` -> `1 HOURS` (ksqlDB's plural unit names)."""
    if ms == 0:
        return "0 SECONDS"
    unit, size = next((u, n) for u, n in UNITS if ms % n == 0)
    return f"{ms // size} {unit}"


def quoted(text: str) -> str:
    """A string literal."""
    return "'" + text.replace("'", "''") + "'"


def _join_all(w, items) -> str:
    return ", ".join(w(i) for i in items)


class StatementWriter(ExpressionWriter):
    """Expressions through ExpressionWriter's hooks, statements through `statements`; the
    clauses both dialects share are methods here."""

    statements: dict = {}
    reserved: frozenset[str] = frozenset()

    def statement(self, stmt: ast.Statement) -> str:
        return self.statements[type(stmt)](self, stmt)

    # ---- the shared SELECT
    def item(self, item) -> str:
        if isinstance(item, ast.Star):
            return f"{self.ident(item.qualifier)}.*" if item.qualifier else "*"
        return self(item.expr) + (f" AS {self.ident(item.alias)}" if item.alias is not None else "")

    def from_item(self, source) -> str:
        return self.ident(source.name) + (f" AS {self.ident(source.alias)}" if source.alias is not None else "")

    def join(self, join: ast.Join) -> str:
        within = ""
        if join.within is not None:
            before, after = join.within
            within = f" WITHIN {duration(before)}" if before == after else \
                f" WITHIN ({duration(before)}, {duration(after)})"
            within += f" GRACE PERIOD {duration(join.grace)}" if join.grace is not None else ""
        return f"{join.kind} JOIN {self.from_item(join.source)}{within} ON {self(join.on)}"

    def select(self, q: ast.Select) -> str:
        parts = [f"SELECT {', '.join(self.item(i) for i in q.items)} FROM {self.from_item(q.source)}"]
        parts += [self.join(j) for j in q.joins]
        parts += [self.window(q.window)] if q.window is not None else []
        parts += [f"WHERE {self(q.where)}"] if q.where is not None else []
        parts += [f"GROUP BY {_join_all(self, q.group_by)}"] if q.group_by else []
        parts += [f"PARTITION BY {_join_all(self, q.partition_by)}"] if q.partition_by else []
        parts += [f"HAVING {self(q.having)}"] if q.having is not None else []
        parts += [f"ORDER BY {', '.join(self.sort_key(k) for k in q.order_by)}"] if q.order_by else []
        parts += ["EMIT FINAL" if q.emit_final else "EMIT CHANGES"] if q.emit_changes else []
        parts += [f"LIMIT {q.limit}"] if q.limit is not None else []
        return " ".join(parts)

    def window(self, w: ast.Window) -> str:
        size = duration(w.size) if w.kind == "SESSION" else f"SIZE {duration(w.size)}"
        size += f", ADVANCE BY {duration(w.advance)}" if w.advance is not None else ""
        tail = (f", RETENTION {duration(w.retention)}" if w.retention is not None else "") \
            + (f", GRACE PERIOD {duration(w.grace)}" if w.grace is not None else "")
        return f"WINDOW {w.kind} ({size}{tail})"


# ---------------------------------------------------------------- ksql
def if_not_exists(s) -> str:
    return "IF NOT EXISTS " if s.if_not_exists else ""


def if_exists(s) -> str:
    return "IF EXISTS " if s.if_exists else ""


def _or_replace(s) -> str:
    return "OR REPLACE " if s.or_replace else ""


def _properties(w, properties) -> str:
    if not properties:
        return ""
    written = []
    for p in properties:
        name = p.name if p.name.isidentifier() and p.name.upper() not in w.reserved else quoted(p.name)
        value = quoted(redact.HIDDEN) if redact.is_secret(p.name) else w(p.value)
        written.append(f"{name}={value}")
    return f" WITH ({', '.join(written)})"


_ROLES = {None: "", "KEY": " KEY", "PRIMARY_KEY": " PRIMARY KEY", "HEADERS": " HEADERS"}


def _column(w, c: ast.ColumnDef) -> str:
    role = f" HEADER({quoted(c.header_key)})" if c.role == "HEADER" else _ROLES[c.role]
    return f"{w.ident(c.name)} {w.type(c.type)}{role}"


def _create_source(w, s: ast.CreateSource) -> str:
    columns = f" ({', '.join(_column(w, c) for c in s.columns)})" if s.columns else ""
    return (f"CREATE {_or_replace(s)}{s.kind} {if_not_exists(s)}"
            f"{w.ident(s.name)}{columns}{_properties(w, s.properties)}")


def _create_as_select(w, s: ast.CreateAsSelect) -> str:
    return (f"CREATE {_or_replace(s)}{s.kind} {if_not_exists(s)}"
            f"{w.ident(s.name)}{_properties(w, s.properties)} AS {w.select(s.query)}")


def _insert_values(w, s: ast.InsertValues) -> str:
    columns = f" ({', '.join(w.ident(c) for c in s.columns)})" if s.columns else ""
    return f"INSERT INTO {w.ident(s.target)}{columns} VALUES ({_join_all(w, s.values)})"


def _print(w, s: ast.Print) -> str:
    return (f"PRINT {quoted(s.topic)}" + (" FROM BEGINNING" if s.from_beginning else "")
            + (f" INTERVAL {s.interval}" if s.interval is not None else "")
            + (f" LIMIT {s.limit}" if s.limit is not None else ""))


def _set(w, s: ast.SetProperty) -> str:
    value = redact.HIDDEN if redact.is_secret(s.name) else redact.url(s.value)
    return f"SET {quoted(s.name)}={quoted(value)}"


KSQL_STATEMENTS = {
    ast.Select: lambda w, s: w.select(s),
    ast.CreateSource: _create_source,
    ast.CreateAsSelect: _create_as_select,
    ast.InsertSelect: lambda w, s: f"INSERT INTO {w.ident(s.target)}{_properties(w, s.properties)} {w.select(s.query)}",
    ast.InsertValues: _insert_values,
    ast.Describe: lambda w, s: f"DESCRIBE {w.ident(s.name)}" + (" EXTENDED" if s.extended else ""),
    ast.Show: lambda w, s: f"SHOW {s.what}" + (" EXTENDED" if s.extended else ""),
    ast.Drop: lambda w, s: f"DROP {s.kind} {if_exists(s)}{w.ident(s.name)}"
    + (" DELETE TOPIC" if s.delete_topic else ""),
    ast.Print: _print,
    ast.SetProperty: _set,
    ast.UnsetProperty: lambda w, s: f"UNSET {quoted(s.name)}",
    ast.Define: lambda w, s: f"DEFINE {s.name} = {quoted(s.value)}",
    ast.Undefine: lambda w, s: f"UNDEFINE {s.name}",
    ast.Explain: lambda w, s: f"EXPLAIN {w.statement(s.statement)}",
    ast.ExplainQuery: lambda w, s: f"EXPLAIN {w.ident(s.query_id)}",
    ast.TerminateQuery: lambda w, s: f"TERMINATE {w.ident(s.query_id)}" if s.query_id is not None else "TERMINATE ALL",
}


class KsqlWriter(StatementWriter):
    """ksqlDB's syntax: names upper case unless `quoted`, reserved words quoted."""

    statements = KSQL_STATEMENTS

    @property
    def reserved(self) -> frozenset[str]:
        return KSQL.reserved_words

    def ident(self, name: str) -> str:
        plain = name.isidentifier() and name.upper() == name and name not in self.reserved
        return name if plain else "`" + name.replace("`", "``") + "`"


KSQL_WRITER = KsqlWriter()


def render_statement(stmt: ast.Statement, dialect="ksql") -> str:
    """`stmt` as text of `dialect` (a name or a parser Dialect), without the final `;`."""
    return writer_of(dialect).statement(stmt)


def writer_of(dialect="ksql") -> StatementWriter:
    """The writer of `dialect` (a name or a Dialect): its statements, and its expressions as
    `writer(expr)`."""
    from .render_materialize import MATERIALIZE_WRITER  # here: render_materialize builds on this module

    name = getattr(dialect, "name", dialect).lower()
    return {"ksql": KSQL_WRITER, "materialize": MATERIALIZE_WRITER}[name]
