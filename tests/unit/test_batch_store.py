"""The per-micro-batch state beside a persistent query's checkpoint (no Spark: snapshots
without rows carry only their facts)."""

import os

from kafkasql_magic.engine.table_aggregate.batch_store_spark import MARKER, BatchState, BatchStore
from kafkasql_magic.engine.table_aggregate.batch_spark import TableState


class Clock(BatchState):
    """A state of one fact (a stream time) carried from batch to batch."""

    def __init__(self, store):
        super().__init__(store)
        self.stream_time = None

    def restore(self, facts: dict, rows) -> None:
        self.stream_time = facts.get("stream_time")

    def advance(self, batch_id: int, stream_time: int) -> None:
        self.stream_time = stream_time
        self.keep(batch_id, {"stream_time": stream_time}, None)


def test_a_batch_starts_from_the_snapshot_of_the_batch_before_it(tmp_path):
    store = BatchStore(str(tmp_path / "state"))
    assert store.load(None, 0) is None  # nothing ran yet
    for batch, stream_time in [(0, 100), (1, 250), (2, 400)]:
        store.save(batch, {"stream_time": stream_time}, None)
    assert store.load(None, 3) == ({"stream_time": 400}, None)
    assert store.load(None, 2) == ({"stream_time": 250}, None)  # batch 2 run again meets what batch 1 left
    assert sorted(os.listdir(tmp_path / "state")) == ["1", "2"]  # the two latest are kept


def test_an_unfinished_snapshot_is_ignored_and_cleared(tmp_path):
    store = BatchStore(str(tmp_path))
    store.save(4, {"stream_time": 10}, None)
    os.makedirs(tmp_path / "5")  # the process ended while batch 5 was being saved: no marker
    assert not (tmp_path / "5" / MARKER).exists()
    assert store.load(None, 6) == ({"stream_time": 10}, None)
    store.save(5, {"stream_time": 20}, None)  # batch 5 runs again and completes
    assert store.load(None, 6) == ({"stream_time": 20}, None)


def test_a_state_reads_the_store_only_when_a_batch_does_not_follow_the_one_in_memory(tmp_path):
    store = BatchStore(str(tmp_path))
    first = Clock(store)
    first.resume(None, 0)
    assert first.stream_time is None
    first.advance(0, 100)
    first.advance(1, 250)
    first.stream_time = 999  # what memory holds is used while batches follow each other
    first.resume(None, 2)
    assert first.stream_time == 999
    first.resume(None, 1)  # Spark runs batch 1 again: it meets what batch 0 left
    assert first.stream_time == 100
    restarted = Clock(store)  # a new process resumes at batch 2
    restarted.resume(None, 2)
    assert (restarted.stream_time, restarted.batch) == (250, 1)
    table = TableState(store)  # without a snapshot before batch 0: no rows
    table.rows = "stale"
    table.resume(None, 0)
    assert table.rows is None
