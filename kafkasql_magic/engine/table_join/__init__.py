"""Table-table joins (Kafka Streams' KTable-KTable joins, on primary keys or a foreign key) as
changelogs in Spark state: `kinds.py` which join and ksqlDB's refusals, `rows.py` which tables a
result row is made of (pure), `build_spark.py` the stateful step on Spark."""
