"""Every SQL example in README.md runs on the embedded stack, as written.

The ```sql blocks are `%%kstream` cells: their statements run in one session. The ```python
blocks that call `ks.connect(...)` run as they are, with `connect` handing back the test
session (the README's address is a placeholder). A ```py block shows settings that need a
secured cluster the embedded stack cannot be, and is not run.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.runtime import PushQuery

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text()) if lang == language]


def cell_body(block: str) -> str:
    """The SQL of a `%%kstream` cell (the magic's line removed)."""
    lines = block.splitlines()
    return "\n".join(lines[1:] if lines and lines[0].startswith("%%kstream") else lines)


def test_the_readme_has_sql_examples():
    assert blocks("sql"), "README.md has no ```sql block"
    assert any("ks.connect(" in b for b in blocks("python")), "README.md shows no Python API example"


def wait_for_rows(query: PushQuery, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while len(query.rows()) < n and query.is_active and time.monotonic() < deadline:
        time.sleep(0.2)
    assert query.failure is None, query.failure
    assert len(query.rows()) >= n, f"{query} saw {len(query.rows())} of {n} rows"


@pytest.mark.parametrize("index", range(len(blocks("sql"))))
def test_sql_block_runs(session, broker, index):
    result = session.sql(cell_body(blocks("sql")[index]))
    if isinstance(result, PushQuery):  # a live query: it must keep running and show new records
        topic = session.catalog.get(result.plan.source.name).topic
        produce(broker.bootstrap_servers, topic, [
            {"key": (7).to_bytes(4, "big"), "value": b'{"item": "pen", "qty": 3, "price": 1.5}',
             "headers": [("channel", b"web")]}])
        wait_for_rows(result, 1)
        result.stop()
        assert result.state in ("STOPPED", "FINISHED"), result.state


@pytest.mark.parametrize("index", [i for i, b in enumerate(blocks("python")) if "ks.connect(" in b])
def test_python_block_runs(session, monkeypatch, index):
    monkeypatch.setattr(ks, "connect", lambda *args, **kwargs: session)
    namespace: dict = {}
    exec(compile(blocks("python")[index], f"README.md python block {index}", "exec"), namespace)
    for value in namespace.values():
        if isinstance(value, PushQuery):
            assert value.failure is None, value.failure
            value.stop()
