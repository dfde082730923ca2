"""Keeping Spark's own log lines out of the notebook.

The JVM writes its start-up notices (incubator modules, log4j, native-hadoop) and later log4j
lines to file descriptor 2, which Jupyter kernels show as a pink stderr block. Starting the JVM
while descriptor 2 points at a log file gives the JVM (and the Python workers it starts) that
file as stderr for good; the kernel's own descriptor is restored at once. Outside a kernel
(scripts, `serve`, tests) Spark's output stays where it is.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path


def log_path() -> Path:
    """Where Spark's output goes: `$KAFKASQL_SPARK_LOG`, else a file in the temp folder."""
    explicit = os.environ.get("KAFKASQL_SPARK_LOG")
    return Path(explicit) if explicit else Path(tempfile.gettempdir()) / f"kafkasql-spark-{os.getpid()}.log"


@contextlib.contextmanager
def quietly():
    """Run the block with descriptors 1 and 2 pointing at `log_path()`."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    try:
        with open(log_path(), "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def in_a_kernel() -> bool:
    """Whether this process is a Jupyter kernel (ipykernel forwards its stderr to the notebook)."""
    return type(sys.stderr).__module__.startswith("ipykernel")


def starting_spark(show: bool = False):
    """The context Spark's JVM starts in: `quietly()` in a Jupyter kernel unless `show`."""
    return quietly() if in_a_kernel() and not show else contextlib.nullcontext()
