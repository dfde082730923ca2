"""How a key's changes in one micro-batch pair with the row the key held: the rule the keyed step
(state_spark.py) applies. Pure, and importing nothing, so that Spark's Python workers load it
cheaply."""

from __future__ import annotations

#: How the step keeps its state, as a persistent query's checkpoint layout records it
#: (sinks/layout.py): a checkpoint that kept the rows otherwise is refused on resume.
LAYOUT = "last row per key in keyed state"


def pairs(held, rows: list) -> tuple[list[tuple], object]:
    """A key that holds `held` (None: no row) changes to each of `rows` in turn (a row, or None:
    a delete). -> (before, after) per change and the row the key holds after them. A pair of two
    Nones (a delete of a row the key did not hold) writes nothing."""
    out = []
    for row in rows:
        out.append((held, row))
        held = row
    return out, held
