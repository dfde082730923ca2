"""A windowed aggregation's state, kept beside a persistent query's checkpoint so that it
survives a restart.

Spark's checkpoint says which micro-batch comes next; this store keeps, per micro-batch id, the
state that batch left: stream time and the open windows' staged rows (Parquet). A batch starts
from the snapshot of the batch before it, so a batch Spark replays after a failure (or after
the process ended) meets the state it met the first time: nothing is counted twice, nothing is
forgotten. The two latest snapshots are kept.
"""

from __future__ import annotations

import json
import os
import shutil

from pyspark.sql import DataFrame, SparkSession

#: A snapshot's marker file: written last, so a snapshot without one is incomplete.
MARKER = "state.json"


class WindowStore:
    """Snapshots under `directory`, one folder per micro-batch id."""

    def __init__(self, directory: str):
        self.directory = directory

    def _folder(self, batch_id: int) -> str:
        return os.path.join(self.directory, str(batch_id))

    def _complete(self) -> list[int]:
        if not os.path.isdir(self.directory):
            return []
        return sorted(int(n) for n in os.listdir(self.directory)
                      if n.isdigit() and os.path.exists(os.path.join(self._folder(int(n)), MARKER)))

    def load(self, spark: SparkSession, before: int) -> tuple[int, DataFrame | None] | None:
        """(stream time, staged rows) left by the latest batch before `before`; None when none ran."""
        earlier = [b for b in self._complete() if b < before]
        if not earlier:
            return None
        folder = self._folder(earlier[-1])
        with open(os.path.join(folder, MARKER)) as marker:
            saved = json.load(marker)
        members = spark.read.parquet(os.path.join(folder, "members")) if saved["members"] else None
        return saved["stream_time"], members

    def save(self, batch_id: int, stream_time: int, members: DataFrame | None) -> None:
        folder = self._folder(batch_id)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        if members is not None:
            members.write.parquet(os.path.join(folder, "members"))
        with open(os.path.join(folder, MARKER), "w") as marker:
            json.dump({"stream_time": stream_time, "members": members is not None}, marker)
        for old in self._complete():
            if old < batch_id - 1:
                shutil.rmtree(self._folder(old), ignore_errors=True)
        for name in os.listdir(self.directory):  # incomplete snapshots of batches never finished
            if name.isdigit() and int(name) > batch_id:
                shutil.rmtree(self._folder(int(name)), ignore_errors=True)
