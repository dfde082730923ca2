"""The per-micro-batch window state beside a persistent query's checkpoint (no Spark: snapshots
without staged rows carry only stream time)."""

import os

from kafkasql_magic.engine.build.window_store import MARKER, WindowStore


def test_a_batch_starts_from_the_snapshot_of_the_batch_before_it(tmp_path):
    store = WindowStore(str(tmp_path / "windows"))
    assert store.load(None, 0) is None  # nothing ran yet
    for batch, stream_time in [(0, 100), (1, 250), (2, 400)]:
        store.save(batch, stream_time, None)
    assert store.load(None, 3) == (400, None)
    assert store.load(None, 2) == (250, None)  # batch 2 run again meets what batch 1 left
    assert sorted(os.listdir(tmp_path / "windows")) == ["1", "2"]  # the two latest are kept


def test_an_unfinished_snapshot_is_ignored_and_cleared(tmp_path):
    store = WindowStore(str(tmp_path))
    store.save(4, 10, None)
    os.makedirs(tmp_path / "5")  # the process ended while batch 5 was being saved: no marker
    assert not (tmp_path / "5" / MARKER).exists()
    assert store.load(None, 6) == (10, None)
    store.save(5, 20, None)  # batch 5 runs again and completes
    assert store.load(None, 6) == (20, None)
