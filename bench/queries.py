"""Query cases of the ingest benchmark, run in the same process and rounds as its raw consume
baseline: push queries over the whole bench topic, timed until every record was processed.

  windowed_aggregation   SELECT ... WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 1 HOUR)
                         GROUP BY tags EMIT CHANGES (stream time and open windows in Spark's
                         keyed state: engine/window)
  windowed_default_grace the same without GRACE PERIOD: ksqlDB's 24 hours, so every record of
                         the run stays in the open windows' state
  session_aggregation    SELECT ... WINDOW SESSION (1 SECOND) GROUP BY tags EMIT CHANGES
                         (open sessions in Spark's keyed state: engine/window)
  stream_table_join      SELECT ... FROM bench JOIN bench_tags ON ... EMIT CHANGES (the table
                         as keyed state: engine/lookup_join)
  stream_table_group_by  the same join feeding GROUP BY
  table_table_join       two tables over the bench topic joined on their key (both changelogs in
                         Spark state, join keys in buckets: engine/table_join/); rows/s per
                         record of one side
  table_three_join       three tables over the bench topic joined on their key (INNER then LEFT:
                         one state holds the three tables' rows per key); rows/s per record of
                         one table
  table_fk_join          the bench table joined to bench_tags on its `tags` column (a foreign-key
                         join: keyed by the left key, then by the foreign key); rows/s per left record
  mz_append_join         Materialize's SUBSCRIBE over the bench stream LEFT-joined with itself on id
                         (both append-only: multisets with diffs in keyed state per join key:
                         engine/diff_join/state_spark.py); rows/s per record of one side
  mz_changelog_join      SUBSCRIBE over the bench stream LEFT-joined with the bench_rows table (a
                         changelog input: its row per record key in keyed state, then per join
                         key); rows/s per stream record

`python bench/ingest.py --records N` runs them (N small for a quick check: `--records 20000`).
"""

from __future__ import annotations

import json
import time

TAGS_TABLE = "bench-tags"


def _until_read(session, text: str, n: int, timeout: float, dialect: str = "ksql") -> float:
    """Seconds a push query takes to process n records of every source it reads (from its start
    to the batch that read the last)."""
    t0 = time.perf_counter()
    handle = session.sql(text, dialect=dialect)
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
    topic = session.catalog.get("BENCH").topic
    for name in ("bench_rows", "bench_rows_b", "bench_rows_c"):
        session.sql(f"CREATE TABLE {name} (k STRING PRIMARY KEY, amount DOUBLE, tags STRING) "
                    f"WITH (kafka_topic='{topic}', value_format='JSON', key_format='KAFKA');")
    windowed = ("SELECT tags, WINDOWSTART AS ws, COUNT(*) AS n, SUM(amount) AS total FROM bench "
                "WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 1 HOUR) GROUP BY tags EMIT CHANGES;")
    default_grace = windowed.replace(", GRACE PERIOD 1 HOUR", "")
    sessions = ("SELECT tags, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS n, SUM(amount) AS total FROM bench "
                "WINDOW SESSION (1 SECOND) GROUP BY tags EMIT CHANGES;")
    joined = ("SELECT b.id, b.amount, t.label FROM bench b JOIN bench_tags t ON b.tags = t.tag "
              "WHERE b.amount < 0 EMIT CHANGES;")  # every record joined, none collected to the driver
    grouped = ("SELECT t.label AS label, COUNT(*) AS n, SUM(b.amount) AS total FROM bench b "
               "JOIN bench_tags t ON b.tags = t.tag GROUP BY t.label EMIT CHANGES;")
    tables = ("SELECT a.k, a.amount, b.tags FROM bench_rows a JOIN bench_rows_b b ON a.k = b.k "
              "EMIT CHANGES;")  # every key joined once both sides have it: n result rows
    three = ("SELECT a.k, a.amount, b.tags, c.amount AS c_amount FROM bench_rows a JOIN bench_rows_b b ON a.k = b.k "
             "LEFT JOIN bench_rows_c c ON a.k = c.k EMIT CHANGES;")
    foreign = ("SELECT a.k, a.amount, t.label FROM bench_rows a JOIN bench_tags t ON a.tags = t.tag "
               "EMIT CHANGES;")  # every left row points at the one tag row
    # every record joined, none collected to the driver (amounts are positive)
    mz_append = "SUBSCRIBE (SELECT a.id, b.amount FROM bench a LEFT JOIN bench b ON a.id = b.id WHERE a.amount < 0)"
    mz_changelog = ("SUBSCRIBE (SELECT a.id, r.tags FROM bench a LEFT JOIN bench_rows r ON a.id::text = r.k "
                    "WHERE a.amount < 0)")
    return {
        "mz_append_join": lambda: n / _until_read(session, mz_append, 2 * n, timeout, "materialize"),
        "mz_changelog_join": lambda: n / _until_read(session, mz_changelog, 2 * n, timeout, "materialize"),
        "windowed_aggregation": lambda: n / _until_read(session, windowed, n, timeout),
        "windowed_default_grace": lambda: n / _until_read(session, default_grace, n, timeout),
        "session_aggregation": lambda: n / _until_read(session, sessions, n, timeout),
        "stream_table_join": lambda: n / _until_read(session, joined, n, timeout),
        "stream_table_group_by": lambda: n / _until_read(session, grouped, n + 1, timeout),
        "table_table_join": lambda: n / _until_read(session, tables, 2 * n, timeout),
        "table_three_join": lambda: n / _until_read(session, three, 3 * n, timeout),
        "table_fk_join": lambda: n / _until_read(session, foreign, n + 1, timeout),
    }
