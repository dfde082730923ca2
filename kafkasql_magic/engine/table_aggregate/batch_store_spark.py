"""Driver-side state of a per-batch table aggregation (Materialize's aggregates that cannot take
a row back: the table's rows, `batch_spark.py`), kept beside a persistent query's checkpoint so that it survives a restart.

Spark's checkpoint says which micro-batch comes next; the store keeps, per micro-batch id, the
state that batch left: a few facts (JSON: stream time) and a frame of rows (Parquet). A batch
starts from the snapshot of the batch before it, so a batch Spark replays after a failure (or
after the process ended) meets the state it met the first time: nothing is counted twice,
nothing is forgotten. The two latest snapshots are kept.
"""

from __future__ import annotations

import json
import os
import shutil

from pyspark.sql import DataFrame, SparkSession

#: A snapshot's marker file: written last, so a snapshot without one is incomplete.
MARKER = "state.json"


class BatchStore:
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

    def load(self, spark: SparkSession, before: int) -> tuple[dict, DataFrame | None] | None:
        """(facts, rows) left by the latest batch before `before`; None when none ran."""
        earlier = [b for b in self._complete() if b < before]
        if not earlier:
            return None
        folder = self._folder(earlier[-1])
        with open(os.path.join(folder, MARKER)) as marker:
            saved = json.load(marker)
        rows = spark.read.parquet(os.path.join(folder, "rows")) if saved["rows"] else None
        return saved["facts"], rows

    def save(self, batch_id: int, facts: dict, rows: DataFrame | None) -> None:
        folder = self._folder(batch_id)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        if rows is not None:
            rows.write.parquet(os.path.join(folder, "rows"))
        with open(os.path.join(folder, MARKER), "w") as marker:
            json.dump({"facts": facts, "rows": rows is not None}, marker)
        for old in self._complete():
            if old < batch_id - 1:
                shutil.rmtree(self._folder(old), ignore_errors=True)
        for name in os.listdir(self.directory):  # incomplete snapshots of batches never finished
            if name.isdigit() and int(name) > batch_id:
                shutil.rmtree(self._folder(int(name)), ignore_errors=True)


class BatchState:
    """State carried from one micro-batch to the next on the driver; with a `store`, each
    batch's is snapshotted, and a batch that does not follow the one held in memory (a new
    process, or a batch Spark runs again) starts from the snapshot of the batch before it."""

    def __init__(self, store: BatchStore | None = None):
        self.store = store
        self.batch: int | None = None  # the micro-batch that left this state

    def restore(self, facts: dict, rows: DataFrame | None) -> None:
        """Take a snapshot's facts and rows ({} and None: the state before any batch)."""
        raise NotImplementedError

    def resume(self, spark: SparkSession, batch_id: int | None) -> None:
        if self.store is None or batch_id is None or self.batch == batch_id - 1:
            return
        saved = self.store.load(spark, batch_id)
        self.restore(*(saved if saved is not None else ({}, None)))
        self.batch = batch_id - 1

    def keep(self, batch_id: int | None, facts: dict, rows: DataFrame | None) -> None:
        """The state micro-batch `batch_id` left, snapshotted when there is a store."""
        self.batch = batch_id
        if self.store is not None and batch_id is not None:
            self.store.save(batch_id, facts, rows)
