"""Materialize's ENVELOPE DEBEZIUM, described in plain Python: what each record does to a table.

Materialize reads a Debezium change event as an upsert on the record's key: the value's
`after` is the key's new row, an `after` of NULL (a delete event) retracts the key's row, and a
tombstone (NULL value, which Debezium writes after a delete) retracts it too (a no-op by then).
`before` is not needed to apply a change. The table's columns are the fields of `after`, which
is why a Debezium source takes no INCLUDE KEY: the key's fields are in the value already.

The engine runs this with its UPSERT machinery (value := after); `replay` is the reference it
is tested against, and `changes` names each record's effect as Materialize's updates do
(row, +1 | -1).
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable, Mapping, Sequence

from ..errors import StatementError

AFTER = "after"  # the value field holding a change's new row
INCLUDE_KEY_MESSAGE = "Cannot use INCLUDE KEY with ENVELOPE DEBEZIUM: Debezium values include all keys."
KEY_FORMAT_MESSAGE = "ENVELOPE DEBEZIUM requires that KEY FORMAT be specified"
FORMAT_MESSAGE = "ENVELOPE DEBEZIUM requires that VALUE FORMAT is set to AVRO or JSON"

# Debezium JSON (FORMAT JSON): the change event is the document, or its `payload` when the
# converter wrote the schema too ({"schema": ..., "payload": {...}}).
PAYLOAD = "payload"
OPERATIONS = ("c", "u", "d", "r")  # create, update, delete, read (a snapshot row: an insert)
NO_ROW_MESSAGE = "Debezium change event has neither a 'before' nor an 'after' row"
OPERATION_MESSAGE = "unsupported Debezium operation \"{}\" (expected one of c, u, d, r)"
MISSING_FIELDS_MESSAGE = "ENVELOPE DEBEZIUM requires a value record with fields 'before' and 'after'; found: {}"

Row = Mapping[str, Any]
Change = tuple[Row, int]


def check_source(includes: Iterable[str], has_key_format: bool) -> None:
    """Statement-time checks: no INCLUDE KEY, and a key to upsert on."""
    if "KEY" in includes:
        raise StatementError(INCLUDE_KEY_MESSAGE)
    if not has_key_format:
        raise StatementError(KEY_FORMAT_MESSAGE)


def after_fields(value_fields: Sequence[tuple[str, Any]]) -> Any:
    """The type of `after` among the value record's (name, type) fields: the table's columns."""
    by_name = {name.lower(): type_ for name, type_ in value_fields}
    if "before" not in by_name or AFTER not in by_name:
        raise StatementError(MISSING_FIELDS_MESSAGE.format(", ".join(name for name, _ in value_fields) or "none"))
    return by_name[AFTER]


def new_row(value: Row | None) -> Row | None:
    """The key's row after a record with this value (None: the key has no row)."""
    return None if value is None else value.get("after")


def json_event(document: Any) -> Row | None:
    """A Debezium JSON value as its change event (the `payload` of a schema-wrapped one);
    StatementError for an event with an unknown operation or with no row at all."""
    if document is None:
        return None
    event = document.get(PAYLOAD, document) if isinstance(document, Mapping) and PAYLOAD in document else document
    if not isinstance(event, Mapping) or (event.get("before") is None and event.get(AFTER) is None):
        raise StatementError(NO_ROW_MESSAGE)
    if event.get("op") is not None and event["op"] not in OPERATIONS:
        raise StatementError(OPERATION_MESSAGE.format(event["op"]))
    return event


def changes(state: dict[Hashable, Row], key: Hashable, value: Row | None) -> list[Change]:
    """Apply one record to `state` (key -> row) and return its updates: an insert (+1), a
    delete (-1), or an update as a retraction then an insertion. A record that changes
    nothing gives no updates."""
    old, new = state.get(key), new_row(value)
    if old == new:
        return []
    updates: list[Change] = []
    if old is not None:
        updates.append((old, -1))
        del state[key]
    if new is not None:
        updates.append((new, +1))
        state[key] = new
    return updates


def replay(records: Iterable[tuple[Hashable, Row | None]]) -> dict[Hashable, Row]:
    """The table after every (key, value) record in order: key -> row."""
    state: dict[Hashable, Row] = {}
    for key, value in records:
        changes(state, key, value)
    return state
