"""Waiting on a persistent query's checkpoint: a test that stops a query to restart it waits
until a micro-batch is committed, so the restart resumes from that batch's state."""

import os
import time


def committed(query, batch: int = 0, timeout: float = 60) -> None:
    """Wait until micro-batch `batch` of `query` is committed in its checkpoint."""
    marker = os.path.join(query.checkpoint, "commits", str(batch))
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker):
        assert time.monotonic() < deadline, f"micro-batch {batch} was not committed within {timeout} s: {query.failure}"
        time.sleep(0.2)
