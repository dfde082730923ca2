"""Table-table joins (Kafka Streams' KTable-KTable joins, on primary keys or a foreign key) as
changelogs in Spark's keyed state: `kinds.py` which join and ksqlDB's refusals, `rows.py` which
tables a result row is made of (pure), `state_spark.py` and `foreign_key_spark.py` the stateful
steps on Spark, `build_spark.py` the frames around them."""
