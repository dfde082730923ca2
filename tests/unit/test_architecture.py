"""ARCHITECTURE.md's module map names the modules that exist, and every module is on it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "kafkasql_magic"


def mapped() -> set[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text[text.index("## Module map"):text.index("## Where each decision lives")]
    return {name for row in table.splitlines() if row.startswith("| `")
            for name in re.findall(r"`([\w/.]+)`", row.split("|")[1])}


def test_every_mapped_module_exists():
    missing = [n for n in mapped() if not (PACKAGE / n.rstrip("/")).exists()]
    assert missing == []


def test_every_module_and_package_is_mapped():
    names = mapped()
    top = {p.name + ("/" if p.is_dir() else "") for p in PACKAGE.iterdir()
           if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__pycache__"}
    assert sorted(top - names) == []
