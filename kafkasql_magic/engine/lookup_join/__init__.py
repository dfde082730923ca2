"""A stream joined with a table kept as keyed state (Kafka Streams' KStream-KTable join): the
table's current row per join key in Spark's state store, each stream record joined with the row
as it is when the record is processed. `rules.py` the order and the output rule (pure),
`state_spark.py` the stateful step on Spark (`transformWithState`)."""
