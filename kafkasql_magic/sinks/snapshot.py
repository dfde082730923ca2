"""A sink `WITH (SNAPSHOT = false)`: the relation's rows at creation are read, not written.

The sink reads its relation from the start as any other (a table's rows, a Debezium sink's
previous rows per key and a GROUP BY's state all need them), and leaves out the records of the
micro-batches that read the records its sources held when it was created: Materialize's
SNAPSHOT = false, only the changes after the sink was created. Where those records end (per
source and partition) is saved beside the query's checkpoint at its first micro-batch, so a
sink restarted from its checkpoint keeps the same bound.
"""

from __future__ import annotations

import json
import os
from typing import Mapping, Sequence

from ..checkpoints import batch_end_offsets
from ..diffs import snapshot_read

#: The file beside a checkpoint that holds where the sources' records ended at creation.
ENDS_FILE = "snapshot_ends.json"


def started_after(ends: Sequence[Mapping[int, int]], start: Sequence[Mapping[int, int]] | None) -> bool:
    """Whether a micro-batch that starts at `start` (per source, where the batch before it
    ended; None: the first batch) reads only records past `ends`."""
    if not any(ends):
        return True
    return start is not None and snapshot_read(ends, start)


class LeftOutSnapshot:
    """Which micro-batches a sink without its snapshot writes. `ends`: per source the sink
    reads, partition -> the end offset of its records at creation."""

    def __init__(self, ends: Sequence[Mapping[int, int]]):
        self._ends = [dict(e) for e in ends]
        self._saved: list[dict[int, int]] | None = None

    def writes(self, checkpoint: str, batch_id: int) -> bool:
        start = batch_end_offsets(checkpoint, batch_id - 1) if batch_id > 0 else None
        return started_after(self._bound(checkpoint), start)

    def _bound(self, checkpoint: str) -> list[dict[int, int]]:
        """The ends saved beside the checkpoint (its first batch saves them)."""
        if self._saved is None:
            path = os.path.join(checkpoint, ENDS_FILE)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    self._saved = [{int(p): o for p, o in e.items()} for e in json.load(f)]
            else:
                with open(path, "w", encoding="utf-8") as f:
                    json.dump([{str(p): o for p, o in e.items()} for e in self._ends], f)
                self._saved = self._ends
        return self._saved
