"""Temporary checkpoints of transient queries, removed only once Spark has let go of them.

`StreamingQuery.stop()` can return (and `awaitTermination` report the query ended) while
Spark's stream thread is still closing the last micro-batch: it then writes the batch's entry
in `<checkpoint>/commits`. Deleting the folder at that moment makes Spark log a
`FileNotFoundException .../commits`. So the folder goes once the stream thread has ended, seen
through the query's JVM object; where that is not reachable, after a grace period. Folders
still pending when Python exits are removed then.
"""

from __future__ import annotations

import atexit
import shutil
import threading
import time

#: How long to wait for Spark's stream thread before removing the folder anyway.
THREAD_TIMEOUT = 60.0
#: The wait when the thread cannot be observed.
GRACE = 5.0

_pending: set[str] = set()
_lock = threading.Lock()


def stream_thread_alive(query) -> bool | None:
    """Whether the JVM thread running `query` is alive; None when it cannot be seen."""
    try:
        return bool(query._jsq.streamingQuery().queryExecutionThread().isAlive())
    except Exception:
        return None


def wait_for_stream_thread(query, timeout: float) -> bool:
    """Wait (at most `timeout` s) for `query`'s stream thread to end, so that the last batch's
    commit and progress report are in; False if it is still running (or cannot be seen)."""
    deadline = time.monotonic() + timeout
    alive = stream_thread_alive(query)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = stream_thread_alive(query)
    return alive is False


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _lock:
        _pending.discard(path)


def _remove_after(query, path: str, timeout: float, grace: float) -> None:
    if stream_thread_alive(query) is None:
        time.sleep(grace)
    else:
        wait_for_stream_thread(query, timeout)
    _remove(path)


def remove_when_stopped(query, path: str, *, timeout: float = THREAD_TIMEOUT, grace: float = GRACE) -> threading.Thread:
    """Remove `path` in the background once `query`'s stream thread has ended."""
    with _lock:
        _pending.add(path)
    worker = threading.Thread(target=_remove_after, args=(query, path, timeout, grace),
                              name="kafkasql-checkpoint-cleanup", daemon=True)
    worker.start()
    return worker


@atexit.register
def _remove_pending() -> None:
    with _lock:
        paths = list(_pending)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def batch_end_offsets(checkpoint: str, batch_id: int) -> list[dict[int, int]] | None:
    """Where micro-batch `batch_id` ends, per source in the order Spark lists them (partition ->
    offset), from the offset log Spark writes before it runs the batch (`offsets/<id>`: a version
    line, the batch's metadata, then one line per source, `-` for a source without offsets);
    None when the log has no such entry."""
    import json
    import os

    from .kafka.offsets import from_json

    try:
        with open(os.path.join(checkpoint, "offsets", str(batch_id)), encoding="utf-8") as log:
            lines = log.read().splitlines()
    except FileNotFoundError:
        return None
    return [{} if line.strip() == "-" else from_json(json.loads(line)) for line in lines[2:] if line.strip()]
