"""The magic in a real IPython shell, for what needs no broker or Spark: usage, errors, displays."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "kafkasql_magic")
    yield ip
    ip.run_line_magic("unload_ext", "kafkasql_magic")


def test_help_starts_with_the_usage_line(shell):
    with capture_output() as out:
        shell.run_line_magic("kstream", "--help")
    first, *rest = out.stdout.splitlines()
    assert first.startswith("%kstream [-h]") and "::" not in out.stdout.split("Streaming SQL")[0]
    assert "::" not in out.stdout and "EMIT CHANGES" in out.stdout and "--max-rows N" in out.stdout
