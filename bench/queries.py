"""Query cases of the ingest benchmark, run in the same process and rounds as its raw consume
baseline: push queries over the whole bench topic, timed until every record was processed.

  windowed_aggregation   SELECT ... WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 1 HOUR)
                         GROUP BY tags EMIT CHANGES (per micro-batch, stream time and open
                         windows as state: engine/build/windowed.py)
  windowed_default_grace the same without GRACE PERIOD: ksqlDB's 24 hours, so every record of
                         the run stays in the open windows' state
  session_aggregation    SELECT ... WINDOW SESSION (1 SECOND) GROUP BY tags EMIT CHANGES
                         (engine/build/sessions.py: sessions re-formed per micro-batch)
  stream_table_join      SELECT ... FROM bench JOIN bench_tags ON ... EMIT CHANGES (the table
                         read afresh for every micro-batch)

`python bench/ingest.py --records N` runs them (N small for a quick check: `--records 20000`).
"""

from __future__ import annotations

import json
import time

TAGS_TABLE = "bench-tags"


def _until_read(session, text: str, n: int, timeout: float) -> float:
    """Seconds a push query takes to process n records (from its start to the batch that read the last)."""
    t0 = time.perf_counter()
    handle = session.sql(text)
    try:
        while handle.records_read < n:
            if handle.failure is not None:
                raise handle.failure
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{handle.records_read:,} of {n:,} records read after {timeout} s: {text}")
            time.sleep(0.2)
        return time.perf_counter() - t0
    finally:
        handle.stop()


def query_cases(session, bootstrap: str, n: int, timeout: float = 3600) -> dict:
    """name -> a function returning rows/s; `session` has the BENCH stream declared."""
    from kafkasql_magic.local import produce

    produce(bootstrap, TAGS_TABLE, [{"key": b"a,b", "value": json.dumps({"label": "both"}).encode()}],
            create_partitions=1)
    session.sql(f"CREATE TABLE bench_tags (tag STRING PRIMARY KEY, label STRING) "
                f"WITH (kafka_topic='{TAGS_TABLE}', value_format='JSON');")
    windowed = ("SELECT tags, WINDOWSTART AS ws, COUNT(*) AS n, SUM(amount) AS total FROM bench "
                "WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 1 HOUR) GROUP BY tags EMIT CHANGES;")
    default_grace = windowed.replace(", GRACE PERIOD 1 HOUR", "")
    sessions = ("SELECT tags, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS n, SUM(amount) AS total FROM bench "
                "WINDOW SESSION (1 SECOND) GROUP BY tags EMIT CHANGES;")
    joined = ("SELECT b.id, b.amount, t.label FROM bench b JOIN bench_tags t ON b.tags = t.tag "
              "WHERE b.amount < 0 EMIT CHANGES;")  # every record joined, none collected to the driver
    return {
        "windowed_aggregation": lambda: n / _until_read(session, windowed, n, timeout),
        "windowed_default_grace": lambda: n / _until_read(session, default_grace, n, timeout),
        "session_aggregation": lambda: n / _until_read(session, sessions, n, timeout),
        "stream_table_join": lambda: n / _until_read(session, joined, n, timeout),
    }
