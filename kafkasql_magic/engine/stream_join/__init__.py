"""ksqlDB's stream-stream join (WITHIN, GRACE PERIOD; INNER, LEFT, RIGHT, FULL): `rules.py` how
long each side's records are held and when one is late (pure), `join_spark.py` the join on
Spark (event-time watermarks on both sides and a time-range condition)."""
