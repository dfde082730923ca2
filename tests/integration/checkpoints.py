"""Restarting persistent queries: a test that stops a query to restart it waits until a
micro-batch is committed, so the restart resumes from that batch's state, and opens each
session of the restart as a new process would (one service id, one state folder)."""

import os
import time
import uuid


def committed(query, batch: int = 0, timeout: float = 60) -> None:
    """Wait until micro-batch `batch` of `query` is committed in its checkpoint."""
    marker = os.path.join(query.checkpoint, "commits", str(batch))
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker):
        assert time.monotonic() < deadline, f"micro-batch {batch} was not committed within {timeout} s: {query.failure}"
        time.sleep(0.2)


def read_to_end(query, bootstrap: str, topics, timeout: float = 90) -> None:
    """Wait until a committed micro-batch of `query` ends where each of `topics` ends: every
    record in them was processed and what it gave was written. A test that checks no more
    records come waits for this, not for a quiet period."""
    from kafkasql_magic.checkpoints import batch_end_offsets
    from kafkasql_magic.kafka.admin import topic_partitions
    from kafkasql_magic.kafka.offsets import EndOffsets

    def shape(offsets):
        return sorted(sorted((int(p), int(o)) for p, o in each.items()) for each in offsets)

    listed = EndOffsets(bootstrap)  # it looks past the embedded broker's listed end (../shared/DESIGN.md)
    ends = shape(listed.latest(t, topic_partitions(bootstrap, t)) for t in topics)
    commits = os.path.join(query.checkpoint, "commits")
    deadline = time.monotonic() + timeout
    while True:
        done = [int(n) for n in os.listdir(commits) if n.isdigit()] if os.path.isdir(commits) else []
        got = batch_end_offsets(query.checkpoint, max(done)) if done else None
        if got is not None and shape(got) == ends:
            return
        assert time.monotonic() < deadline, f"the query did not read to {ends} within {timeout} s: {got}, {query.failure}"
        time.sleep(0.2)


def restartable(broker, spark, tmp_path, registry=None, prefix: str = "svc"):
    """`connect()` for one service and one state folder: each call opens the session a restarted
    process would, which replays the service's command topic and resumes its queries."""
    import kafkasql_magic as ks

    service, state = f"{prefix}{uuid.uuid4().hex[:6]}", str(tmp_path / "state")

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, schema_registry_url=registry, spark=spark,
                          timeout=90, state_dir=state, service_id=service)
    return connect
