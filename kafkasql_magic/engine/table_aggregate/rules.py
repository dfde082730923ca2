"""Rules of an aggregation over a TABLE. Pure: no Spark here.

A table's changelog holds several versions of one row; only the latest counts. A change of a
row retracts its old version from its old group (the accumulators' `subtract`) and adds the new
one to its new group, in that order (Kafka Streams' subtractor, then its adder). A tombstone, a
row the WHERE clause rejects or a row whose group key is NULL only retracts. A group left with
no member keeps the aggregates of no rows (a COUNT of 0) in ksqlDB; a dialect that does not keep
such groups (Materialize) deletes it.

Two keyed steps run it (`keyed_spark.py`): `moves` per table key, whose state is the row's
counted version (its group key and aggregate arguments), then `Group` per group key, whose state
is the group's accumulators and member count.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...errors import StatementError
from ..aggregate.accumulators import UNDOABLE, Accumulator

#: Of the aggregate functions here, those ksqlDB applies to a table source (its TableUdaf ones,
#: which can `undo`); it refuses the others (SchemaKGroupedTable.aggregate).
KSQL_TABLE_AGGREGATES = ("COUNT", "SUM", "AVG", "COLLECT_LIST")

#: A retracted version sorts before the version that replaces it (`change_order`).
RETRACTED, ADDED = 0, 1


def check_table_aggregates(names: Iterable[str]) -> None:
    """ksqlDB's refusal of aggregate functions that cannot take a row back, over a table."""
    refused = list(dict.fromkeys(n for n in names if n not in KSQL_TABLE_AGGREGATES))
    if refused:
        joined = refused[0] if len(refused) == 1 else f"{', '.join(refused[:-1])} and {refused[-1]}"
        raise StatementError(f"The aggregation function{'s' if len(refused) > 1 else ''} {joined} cannot be applied "
                             "to a table source, only to a stream source.")


def keyed(names: Iterable[str]) -> bool:
    """Whether an aggregation over a table calling the aggregate functions `names` runs in keyed
    state: each can take a row back (accumulators.UNDOABLE). Otherwise it runs per micro-batch."""
    return all(name in UNDOABLE for name in names)


def change_order(offset: int, step: int) -> int:
    """Where a group's change sorts among the changes a sink writes in input order: its record's
    offset, the old group's retraction before the new group's addition (`step`)."""
    return offset * 2 + step


def moves(stored: tuple | None, changes: Iterable[tuple[bool, tuple, object]], keys: int) -> tuple[list, tuple | None]:
    """One table key's changes in offset order, each (counts, version, change) where `version`
    is the row's group key (its first `keys` values) then its aggregate arguments and `counts`
    says whether the row is in a group now -> the steps for the groups, each (sign, version,
    change, step, shown): -1 when `version` leaves its group, +1 when it joins one, `shown`
    False for a retraction whose row stays in the same group (Kafka Streams, KIP-904: one change
    of the group, after the subtractor then the adder); and the key's counted version afterwards.
    `stored`: its version before."""
    out = []
    for counts, version, change in changes:
        new = version if counts else None
        if stored is not None:
            stays = new is not None and new[:keys] == stored[:keys]
            out.append((-1, stored, change, RETRACTED, not stays))
        if new is not None:
            out.append((1, new, change, ADDED, True))
        stored = new
    return out, stored


class Group:
    """A group's accumulators and member count, with rows added and taken back."""

    def __init__(self, accumulators: list[Accumulator], states: list[tuple] | None = None, members: int = 0):
        self.accumulators = accumulators
        self.states = states if states is not None else [acc.initial for acc in accumulators]
        self.members = members

    def apply(self, sign: int, arguments: Iterable[tuple]) -> None:
        """Add (`sign` 1) or take back (-1) one row given each aggregate's arguments."""
        for index, (acc, args) in enumerate(zip(self.accumulators, arguments)):
            step = acc.add if sign > 0 else acc.subtract
            self.states[index] = step(self.states[index], args)
        self.members += sign

    def results(self) -> Iterator:
        return (acc.result(state) for acc, state in zip(self.accumulators, self.states))
