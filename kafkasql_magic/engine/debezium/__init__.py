"""A sink's previous row per key (Materialize's ENVELOPE DEBEZIUM `before`, an UPSERT tombstone's
headers): `rules.py` how a key's changes pair with the row it held (pure), `state_spark.py` the
keyed step that holds that row in Spark's state store (`transformWithState`, one ValueState)."""
