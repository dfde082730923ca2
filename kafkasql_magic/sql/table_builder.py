"""Builder rules for Materialize's writable tables (materialize.lark: create_table, insert_rows,
update_rows, delete_rows) and the custom types their columns may name (create_type, named_type),
one method per grammar rule as in builder.py; MaterializeBuilder inherits them."""

from __future__ import annotations

from lark import v_args

from . import ast
from . import ast_materialize as mz_ast
from . import ast_tables as tables
from .builder import Builder, Invalid, _pos

__all__ = ["TableRules"]


def _once(names, meta) -> None:
    """PostgreSQL's refusal of a column named twice in one column list or SET."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise Invalid(f'column "{name}" specified more than once', meta.line, meta.column)
        seen.add(name)


@v_args(meta=True, inline=True)
class TableRules(Builder):
    def create_table(self, meta, if_not_exists, name, *columns):
        _once([c.name for c in columns], meta)
        return tables.CreateTable(name, tuple(columns), bool(if_not_exists), **_pos(meta))

    def table_column(self, meta, name, type_):
        return tables.TableColumn(name, type_, **_pos(meta))

    def insert_rows(self, meta, target, columns, *rows):
        _once(columns or (), meta)
        return tables.InsertRows(target, tuple(columns or ()), tuple(rows), **_pos(meta))

    def values_row(self, meta, *values):
        return tuple(values)

    def update_rows(self, meta, target, *rest):
        *assignments, where = rest
        _once([a.name for a in assignments], meta)
        return tables.Update(target, tuple(assignments), where[1] if where else None, **_pos(meta))

    def assignment(self, meta, column, value):
        return tables.Assignment(column, value, **_pos(meta))

    def delete_rows(self, meta, target, where):
        return tables.Delete(target, where[1] if where else None, **_pos(meta))

    def values_query(self, meta, *rows):
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise Invalid("VALUES lists must all be the same length", meta.line, meta.column)
        return tables.CreateValuesView("", tuple(rows), **_pos(meta))

    # ---- CREATE TYPE
    def create_type(self, meta, name, type_):
        return mz_ast.CreateType(name, type_, **_pos(meta))

    def record_definition(self, meta, *fields):
        _once([n for n, _ in fields], meta)
        return ast.Type("STRUCT", fields=tuple(fields), **_pos(meta))

    def type_field(self, meta, name, type_):
        return name, type_

    def list_definition(self, meta, element):
        return ast.Type("ARRAY", element=element, **_pos(meta))

    def map_definition(self, meta, key, value):
        return ast.Type("MAP", key=key, value=value, **_pos(meta))

    def named_type(self, meta, token):
        """A type CREATE TYPE named (unquoted: lower-cased, as every identifier)."""
        return mz_ast.NamedType("NAMED", type_name=self.identifier(meta, token), **_pos(meta))
