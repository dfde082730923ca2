"""Every SQL example in README.md and on the documentation site (docs/*.md) runs on the embedded
stack, as written.

The ```sql blocks are `%%kstream` cells (in the dialect their magic line names): their statements
run in one session, page after page (README.md first, then docs/ in name order). A live query's
example gets one record written to its topic and must show it. When a ```text block follows an
example, it is the output the page promises: the live query's row, or a finite result's rows, must
read as it says. The ```python blocks that call `ks.connect(...)` run as they are, with `connect`
handing back the test session (the address is a placeholder). A ```py block shows settings that
need a secured cluster the embedded stack cannot be, and is not run.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.runtime import PushQuery

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced(page: Path) -> list[tuple[str, str]]:
    return FENCE.findall(page.read_text())


def examples(language: str) -> list[tuple[str, str, str | None]]:
    """(where, body, the ```text block right after it or None) of every block in `language`."""
    found = []
    for page in PAGES:
        blocks = fenced(page)
        ours = [i for i, (lang, _) in enumerate(blocks) if lang == language]
        for n, i in enumerate(ours):
            after = blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text" else None
            found.append((f"{page.relative_to(ROOT)} {language} block {n}", blocks[i][1], after))
    return found


SQL = examples("sql")
PYTHON = [e for e in examples("python") if "ks.connect(" in e[1]]


def cell(block: str) -> tuple[str, str | None]:
    """The SQL of a `%%kstream` cell (the magic's line removed) and the dialect that line names."""
    lines = block.splitlines()
    if not lines or not lines[0].startswith("%%kstream"):
        return block, None
    dialect = re.search(r"--dialect[ =](\w+)", lines[0])
    return "\n".join(lines[1:]), dialect and dialect.group(1)


def test_the_pages_have_examples():
    assert [w for w, _, _ in SQL if w.startswith("README.md")], "README.md has no ```sql block"
    assert PYTHON, "no page shows a Python API example"


def wait_for_rows(query: PushQuery, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while len(query.rows()) < n and query.is_active and time.monotonic() < deadline:
        time.sleep(0.2)
    assert query.failure is None, query.failure
    assert len(query.rows()) >= n, f"{query} saw {len(query.rows())} of {n} rows"


def shown_rows(text: str) -> list[dict[str, str]]:
    """A ```text output block: a line of column names, then one line per row, columns apart by
    two or more spaces."""
    lines = [line for line in text.splitlines() if line.strip()]
    names = lines[0].split()
    return [dict(zip(names, re.split(r"\s{2,}", line.strip()))) for line in lines[1:]]


@pytest.mark.parametrize("where, body, output", SQL, ids=[w for w, _, _ in SQL])
def test_sql_block_runs(session, broker, where, body, output):
    text, dialect = cell(body)
    rows = result = session.sql(text, dialect=dialect)
    if isinstance(result, PushQuery):  # a live query: it must keep running and show new records
        topic = session.catalog.get(result.plan.source.name).topic
        produce(broker.bootstrap_servers, topic, [
            {"key": (7).to_bytes(4, "big"), "value": b'{"item": "pen", "qty": 3, "price": 1.5}',
             "headers": [("channel", b"web")]}])
        wait_for_rows(result, 1)
        rows = result.rows()
        result.stop()
        assert result.state in ("STOPPED", "FINISHED"), result.state
    if output is not None:  # the rows the page shows
        assert isinstance(rows, pd.DataFrame), f"{where} shows rows, the example gave {rows!r}"
        got = [{name: str(value) for name, value in row.items()} for row in rows.to_dict("records")]
        assert got == shown_rows(output), f"{where} shows {shown_rows(output)}, the query gave {got}"


@pytest.mark.parametrize("where, body, output", PYTHON, ids=[w for w, _, _ in PYTHON])
def test_python_block_runs(session, monkeypatch, where, body, output):
    monkeypatch.setattr(ks, "connect", lambda *args, **kwargs: session)
    namespace: dict = {}
    exec(compile(body, where, "exec"), namespace)
    for value in namespace.values():
        if isinstance(value, PushQuery):
            assert value.failure is None, value.failure
            value.stop()
