"""Declared streams and tables: logical schema (key, value and header columns), formats, topic."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import StatementError
from .formats import FormatSpec
from .sql import ast

#: Column roles in a source's logical schema.
KEY, VALUE, HEADERS, HEADER = "KEY", "VALUE", "HEADERS", "HEADER"


@dataclass(frozen=True)
class Column:
    name: str
    type: ast.Type
    role: str = VALUE
    header_key: str | None = None


@dataclass(frozen=True)
class SourceDef:
    kind: str  # STREAM | TABLE
    name: str
    topic: str
    key_format: FormatSpec
    value_format: FormatSpec
    columns: tuple[Column, ...]
    statement: str = ""
    properties: dict = field(default_factory=dict, compare=False)

    def with_role(self, *roles: str) -> list[Column]:
        return [c for c in self.columns if c.role in roles]

    @property
    def key_columns(self) -> list[Column]:
        return self.with_role(KEY)

    @property
    def value_columns(self) -> list[Column]:
        return self.with_role(VALUE)

    @property
    def header_columns(self) -> list[Column]:
        return self.with_role(HEADERS, HEADER)

    @property
    def star_columns(self) -> list[Column]:
        """What `SELECT *` returns: key columns first, then the rest in declared order."""
        return self.key_columns + [c for c in self.columns if c.role != KEY]


class Catalog:
    """Sources by name. One catalog serves every dialect: names are stored as resolved."""

    def __init__(self):
        self._sources: dict[str, SourceDef] = {}

    def add(self, source: SourceDef, *, or_replace: bool = False, if_not_exists: bool = False) -> bool:
        """Register `source`; False when it existed and IF NOT EXISTS kept the old one."""
        existing = self._sources.get(source.name)
        if existing is not None and not or_replace:
            if if_not_exists:
                return False
            kind = existing.kind.capitalize()
            raise StatementError(
                f"Cannot add {source.kind.lower()} '{source.name}': A {kind.lower()} with the same name already exists"
            )
        self._sources[source.name] = source
        return True

    def get(self, name: str) -> SourceDef:
        source = self._sources.get(name)
        if source is None:
            raise StatementError(f"{name} does not exist.")
        return source

    def drop(self, kind: str, name: str, *, if_exists: bool = False) -> SourceDef | None:
        source = self._sources.get(name)
        if source is None or source.kind != kind:
            if if_exists:
                return None
            raise StatementError(f"{kind.capitalize()} {name} does not exist.")
        return self._sources.pop(name)

    def __iter__(self):
        return iter(list(self._sources.values()))

    def __contains__(self, name: str) -> bool:
        return name in self._sources
