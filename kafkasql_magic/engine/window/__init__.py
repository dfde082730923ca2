"""Windowed aggregation: TUMBLING, HOPPING and SESSION windows with ksqlDB's grace period, EMIT
FINAL and retention (`timing.py`, `rules.py`, `session_rules.py`: the rules and messages, no Spark),
a windowed source's key split into inner key and window bounds (`keys_spark.py`) and the
aggregations themselves in Spark's keyed state (`windowed_spark.py`, `sessions_spark.py`)."""
