"""Declared streams and tables: logical schema (key, value and header columns), formats, topic."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import StatementError, did_you_mean
from .formats import FormatSpec
from .sql import ast
from .sql.names import match

#: Column roles in a source's logical schema. The metadata roles come from Materialize's
#: INCLUDE PARTITION | OFFSET | TIMESTAMP | TOPIC (ksql has pseudocolumns for those instead).
KEY, VALUE, HEADERS, HEADER = "KEY", "VALUE", "HEADERS", "HEADER"
PARTITION, OFFSET, TIMESTAMP, TOPIC = "PARTITION", "OFFSET", "TIMESTAMP", "TOPIC"
#: Materialize's ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE): a value's decode error as a
#: record (description text) instead of a failure.
INLINE_ERROR = "INLINE_ERROR"


@dataclass(frozen=True)
class Column:
    name: str
    type: ast.Type
    role: str = VALUE
    header_key: str | None = None
    #: The name the key or value format knows this column by, when the column was renamed
    #: (Materialize's column list, INCLUDE KEY AS over a one-field record key).
    field: str | None = None

    @property
    def format_field(self) -> str:
        return self.field or self.name


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
    envelope: str = "NONE"  # UPSERT: the latest value per key wins, a NULL value deletes it
    dialect: str = "ksql"

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

    @property
    def keyed(self) -> bool:
        """A table (ksql TABLE, Materialize UPSERT source): one live row per key."""
        return self.kind == "TABLE" or self.envelope == "UPSERT"


@dataclass(frozen=True)
class ViewDef:
    """A named query (Materialize's CREATE VIEW): queried like a source, planned inline."""

    name: str
    query: object  # ast.Select
    statement: str = ""
    kind: str = "VIEW"
    dialect: str = "materialize"


class Catalog:
    """Sources by name. One catalog serves every dialect: names are stored as resolved.
    Materialize's secrets and connections live beside them (`connections`)."""

    def __init__(self):
        from .dialects.comments import Comments  # the dialects import this module
        from .dialects.connections import Connections

        self._sources: dict[str, SourceDef | ViewDef] = {}
        self.connections = Connections()
        #: Materialize's custom types by name (dialects/custom_types.TypeDef)
        self.types: dict = {}
        #: Materialize's COMMENT ON texts (dialects/comments.py)
        self.comments = Comments()

    def connection(self, name: str, kind: str | None = None):
        """Connection `name` as a `dialects.connections.Endpoint` (address, client properties
        with secrets resolved); `kind` "KAFKA" or "CONFLUENT SCHEMA REGISTRY" checks its kind.
        Clients made for its address (a `clientconf.Address`) carry those properties, others not."""
        return self.connections.endpoint(name, kind)

    def resolve(self, name: str, dialect: str | None = None) -> str | None:
        """The stored name for `name` written in `dialect`: exact, else the only
        case-insensitive match when `name` could be unquoted there (sql/names.py: a source
        created in one dialect can be named from the other; ksql's `"foo"` is not `FOO`)."""
        own = [n for n, s in self._sources.items() if getattr(s, "dialect", None) == dialect]
        return match(name, self._sources, dialect, own)

    def add(self, source, *, or_replace: bool = False, if_not_exists: bool = False) -> bool:
        """Register `source`; False when it existed and IF NOT EXISTS kept the old one."""
        existing = self._sources.get(self.resolve(source.name, source.dialect) or source.name)
        if existing is not None and not or_replace:
            if if_not_exists:
                return False
            kind = existing.kind.capitalize()
            raise StatementError(
                f"Cannot add {source.kind.lower()} '{source.name}': A {kind.lower()} with the same name already exists"
            )
        self._sources[source.name] = source
        return True

    def get(self, name: str, dialect: str | None = None):
        source = self._sources.get(self.resolve(name, dialect) or name)
        if source is None:
            raise StatementError(f"{name} does not exist.").hinted(did_you_mean(name, self._sources))
        return source

    def drop(self, kind: str, name: str, *, if_exists: bool = False):
        """Drop a STREAM, TABLE, VIEW or (any kind) SOURCE named `name`."""
        source = self._sources.get(self.resolve(name) or name)
        if source is None or kind not in (source.kind, "SOURCE"):
            if if_exists:
                return None
            raise StatementError(f"{kind.capitalize()} {name} does not exist.").hinted(
                did_you_mean(name, [n for n, s in self._sources.items() if kind in (s.kind, "SOURCE")]))
        self.comments.drop(source.name)
        return self._sources.pop(source.name)

    def __iter__(self):
        return iter(list(self._sources.values()))

    def __contains__(self, name: str) -> bool:
        return self.resolve(name) is not None
