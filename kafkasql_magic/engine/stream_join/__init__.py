"""ksqlDB's stream-stream join (WITHIN, GRACE PERIOD; INNER, LEFT, RIGHT, FULL) as Kafka Streams
computes it: `rules.py` when a record is late, which records meet and when an outer side's
unmatched record comes out (pure), `state_spark.py` the keyed state (each side's stream time per
input partition, each join key's records of both sides), `join_spark.py` the frame around it."""
