"""Running totals over a streaming query's progress reports.

Spark keeps only the last `spark.sql.streaming.numRecentProgressUpdates` (100) reports in
`recentProgress`, so a sum over them undercounts any query that ran more micro-batches than
that. A tally folds each report in once, as it is seen, and keeps only the total.
"""

from __future__ import annotations

import threading


class ProgressTally:
    """Records read so far, from progress reports seen in any order and any number of times.

    An idle trigger reports again under the last batch's id with no rows, so a report counts
    once per batch id, with the most rows seen for that id."""

    def __init__(self):
        self._lock = threading.Lock()
        self._total = 0
        self._last_batch = -1
        self._last_rows = 0

    def update(self, reports) -> int:
        with self._lock:
            for report in reports or ():
                batch, rows = int(report["batchId"]), int(report["numInputRows"])
                if batch > self._last_batch:
                    self._total += rows
                    self._last_batch, self._last_rows = batch, rows
                elif batch == self._last_batch and rows > self._last_rows:
                    self._total += rows - self._last_rows
                    self._last_rows = rows
            return self._total

    def follow(self, query) -> int:
        """Fold in a running (or stopped) query's newest report; its whole recent history
        only when batches went by unseen."""
        last = query.lastProgress
        if not last:
            return self._total
        missed = int(last["batchId"]) > self._last_batch + 1
        return self.update(query.recentProgress if missed else [last])
