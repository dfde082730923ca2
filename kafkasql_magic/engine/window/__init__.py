"""Windowed aggregation: TUMBLING and HOPPING windows with ksqlDB's grace period, EMIT FINAL and
retention (`timing.py`: the rules and messages, no Spark), a windowed source's key split into
inner key and window bounds (`keys_spark.py`) and the aggregation itself (`windowed_spark.py`)."""
