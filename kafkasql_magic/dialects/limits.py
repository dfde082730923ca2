"""Values a statement may carry, checked when the statement runs, not when a record fails later.

Each check raises StatementError with the message ksqlDB (or Materialize) gives for the same
value; where ksqlDB accepts a value Spark cannot hold (DECIMAL precision above 38), the message
says so. Pure: no Kafka, no Spark.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from ..errors import StatementError
from ..sql import ast

#: Java's Integer.MAX_VALUE and Short.MAX_VALUE: ksqlDB parses PARTITIONS and REPLICAS into them.
INT_MAX = 2**31 - 1
SHORT_MAX = 2**15 - 1
#: Spark's DecimalType holds at most 38 digits.
DECIMAL_MAX_PRECISION = 38
#: ksqlDB's named delimiters (a single character is taken as it is).
NAMED_DELIMITERS = ("TAB", "SPACE")
#: Kafka's topic names: at most 249 ASCII letters, digits, '.', '_' and '-'.
TOPIC_MAX_LENGTH = 249
TOPIC_CHARACTERS = re.compile(r"[A-Za-z0-9._-]+")


def _count(value, what: str, maximum: int) -> int:
    """A positive count from a WITH-clause value, as ksqlDB's WithClauseUtil parses it."""
    text = str(value).strip().strip("'")
    try:
        number = int(text)
    except ValueError:
        raise StatementError(f"Invalid number of {what} in WITH clause: {value}") from None
    if number > maximum:  # Integer.parseInt / Short.parseShort would throw NumberFormatException
        raise StatementError(f"Invalid number of {what} in WITH clause: {value}")
    if number <= 0:
        raise StatementError(f"Invalid number of {what} in WITH clause (must be positive): {number}")
    return number


def partitions(value) -> int:
    return _count(value, "partitions", INT_MAX)


def replicas(value) -> int:
    return _count(value, "replicas", SHORT_MAX)


def delimiter(value) -> None:
    """KEY_DELIMITER / VALUE_DELIMITER: one character, or TAB or SPACE."""
    text = str(value)
    if not text.strip():
        raise StatementError(
            "Delimiter cannot be empty, if you meant to have a tab or space for delimiter, please use "
            "the special values 'TAB' or 'SPACE'\nExample valid value: ';'")
    if len(text) != 1 and text.upper() not in NAMED_DELIMITERS:
        raise StatementError(
            f"Invalid delimiter value: '{text}'. Delimiter must be a single character or "
            f"[{', '.join(NAMED_DELIMITERS)}]\nExample valid value: ';'")


def topic_name(value) -> None:
    """A topic name the broker would refuse, refused before any client sees it (Kafka's words)."""
    name = str(value)
    if not name:
        raise StatementError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise StatementError('Topic name cannot be "." or ".."')
    if len(name) > TOPIC_MAX_LENGTH:
        raise StatementError(f"Topic name is illegal, it can't be longer than {TOPIC_MAX_LENGTH} characters, "
                             f"Topic name: {name}")
    if not TOPIC_CHARACTERS.fullmatch(name):
        raise StatementError(f'Topic name "{name}" is illegal, it contains a character other than '
                             "ASCII alphanumerics, '.', '_' and '-'")


#: WITH-clause property -> its check.
PROPERTY_CHECKS = {
    "KAFKA_TOPIC": topic_name,
    "PARTITIONS": partitions,
    "REPLICAS": replicas,
    "KEY_DELIMITER": delimiter,
    "VALUE_DELIMITER": delimiter,
}


def check_properties(props: dict) -> None:
    for name, check in PROPERTY_CHECKS.items():
        if props.get(name) is not None:
            check(props[name])


def check_type(t: ast.Type) -> None:
    """DECIMAL(p, s) anywhere in a type (also inside ARRAY, MAP and STRUCT)."""
    if t.name == "DECIMAL" and t.precision is not None:
        p, s = t.precision, t.scale or 0
        shown = f"DECIMAL({p},{s})"
        if p < 1:
            raise StatementError(f"DECIMAL precision must be >= 1: {shown}")
        if s < 0:
            raise StatementError(f"DECIMAL scale must be >= 0: {shown}")
        if p < s:
            raise StatementError(f"DECIMAL precision must be >= scale: {shown}")
        if p > DECIMAL_MAX_PRECISION:
            # the CAST's wording (ksqlDB's own has no upper bound; Spark's decimal holds 38 digits)
            raise StatementError(f"DECIMAL precision must be between 1 and {DECIMAL_MAX_PRECISION}: {shown}")
    for inner in (t.element, t.key, t.value, *(ft for _, ft in t.fields)):
        if inner is not None:
            check_type(inner)


def check_limit(limit: int | None) -> None:
    """LIMIT n: a positive 32-bit integer, as ksqlDB's parser reads it."""
    if limit is None:
        return
    if limit > INT_MAX:
        raise StatementError(f"Invalid LIMIT clause: {limit} is out of range (the most is {INT_MAX})")
    if limit <= 0:
        raise StatementError(f"Invalid LIMIT clause: LIMIT must be a positive integer, got {limit}")


def check_avro_schema(text: str) -> None:
    """Materialize's `FORMAT AVRO USING SCHEMA '...'`: JSON that is an Avro schema (every type
    known, every record with its fields), refused in Materialize's words."""
    from ..formats.avro_types import schema_problem

    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise StatementError(f"validating avro schema: {exc}") from None
    problem = schema_problem(schema)
    if problem is not None:
        raise StatementError(f"validating avro schema: {problem}")


def check_registry_url(url: str) -> None:
    """`USING CONFLUENT SCHEMA REGISTRY '...'`: an absolute http(s) URL."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise StatementError(f"invalid schema registry URL '{url}': relative URL without a base")
    if parts.scheme.lower() not in ("http", "https"):
        raise StatementError(f"invalid schema registry URL '{url}': the scheme must be http or https")


def check_view_cycle(name: str, query: ast.Select, catalog) -> None:
    """A view may not read itself, directly or through other views (Materialize's message)."""
    from ..catalog import ViewDef
    from ..sql.ast_materialize import Subquery

    target = catalog.resolve(name) or name
    pending = [query]
    seen: set[str] = set()
    while pending:
        select = pending.pop()
        for ref in (select.source, *(j.source for j in select.joins)):
            if isinstance(ref, Subquery):  # its FROM items are the view's too
                pending.append(ref.query)
                continue
            resolved = catalog.resolve(ref.name) or ref.name
            if resolved.lower() == target.lower():
                raise StatementError(f"cannot replace view {name}: depended upon by new {name} definition")
            if resolved in seen or resolved not in catalog:
                continue
            seen.add(resolved)
            relation = catalog.get(resolved)
            if isinstance(relation, ViewDef):
                pending.append(relation.query)
