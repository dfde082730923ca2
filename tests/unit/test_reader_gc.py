"""The reader freezes long-lived objects once per Spark worker, never in other processes."""

from __future__ import annotations

import gc
import sys
import types

import pytest

from kafkasql_magic.kafka import arrow_batch


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(arrow_batch, "_frozen", False)
    yield
    gc.unfreeze()


def test_a_process_that_is_not_sparks_daemon_keeps_its_collector(fresh):
    before = gc.get_freeze_count()
    arrow_batch._freeze_long_lived()
    assert gc.get_freeze_count() == before
    assert arrow_batch._frozen is False


def test_a_worker_of_sparks_daemon_freezes_once(fresh, monkeypatch):
    daemon = types.SimpleNamespace(__spec__=types.SimpleNamespace(name="pyspark.daemon"))
    monkeypatch.setitem(sys.modules, "__main__", daemon)
    arrow_batch._freeze_long_lived()
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
    arrow_batch._freeze_long_lived()  # once per process: a later range does not freeze again
    assert gc.get_freeze_count() == 0
