"""Running totals over progress reports, and checkpoint removal after Spark's stream thread ends."""

from __future__ import annotations

import os
import tempfile
import time

from kafkasql_magic import checkpoints
from kafkasql_magic.progress import ProgressTally


class FakeQuery:
    """Spark's view of a query: the newest report, and only the last `keep` in the history."""

    def __init__(self, keep: int = 100):
        self.reports: list[dict] = []
        self.keep = keep

    def run_batch(self, rows: int) -> None:
        self.reports.append({"batchId": len(self.reports), "numInputRows": rows})

    @property
    def lastProgress(self):
        return self.reports[-1] if self.reports else None

    @property
    def recentProgress(self):
        return self.reports[-self.keep:]


def test_a_tally_counts_every_batch_not_only_the_last_hundred():
    query, tally = FakeQuery(keep=100), ProgressTally()
    for _ in range(250):
        query.run_batch(7)
        tally.follow(query)
    assert tally.follow(query) == 250 * 7


def test_batches_seen_late_are_read_from_the_history():
    query, tally = FakeQuery(keep=100), ProgressTally()
    for rows in (1, 2, 3, 4):
        query.run_batch(rows)
    assert tally.follow(query) == 10  # four batches went by between two looks


def test_idle_reports_repeat_a_batch_id_and_count_once():
    tally = ProgressTally()
    tally.update([{"batchId": 0, "numInputRows": 5}])
    tally.update([{"batchId": 0, "numInputRows": 5}, {"batchId": 0, "numInputRows": 0}])
    assert tally.update([{"batchId": 1, "numInputRows": 0}, {"batchId": 1, "numInputRows": 3}]) == 8


class FakeStreamThread:
    def __init__(self, alive_for: float):
        self.until = time.monotonic() + alive_for

    def isAlive(self):
        return time.monotonic() < self.until


class FakeJvmQuery:
    def __init__(self, thread):
        outer = self

        class Execution:
            def queryExecutionThread(self):
                return thread

        class Wrapper:
            def streamingQuery(self):
                return Execution()

        outer._jsq = Wrapper()


def test_a_checkpoint_stays_until_the_stream_thread_ends():
    path = tempfile.mkdtemp(prefix="kafkasql-test-")
    worker = checkpoints.remove_when_stopped(FakeJvmQuery(FakeStreamThread(0.6)), path)
    time.sleep(0.3)
    assert os.path.isdir(path), "removed while Spark's stream thread was still running"
    worker.join(5)
    assert not os.path.exists(path)


def test_an_unobservable_query_gets_a_grace_period():
    path = tempfile.mkdtemp(prefix="kafkasql-test-")
    worker = checkpoints.remove_when_stopped(object(), path, grace=0.4)
    time.sleep(0.1)
    assert os.path.isdir(path)
    worker.join(5)
    assert not os.path.exists(path)


def test_waiting_for_the_stream_thread():
    assert checkpoints.wait_for_stream_thread(FakeJvmQuery(FakeStreamThread(0.2)), 5) is True
    assert checkpoints.wait_for_stream_thread(FakeJvmQuery(FakeStreamThread(5)), 0.2) is False
    assert checkpoints.wait_for_stream_thread(object(), 1) is False
