"""GROUP BY over a TABLE's changelog (Kafka Streams' KGroupedTable with an adder and a
subtractor): which aggregations retract in keyed state and the rules of a row's move between
groups (`rules.py`, pure), the two keyed steps on Spark (`keyed_spark.py`) and the frame around
them (`build_spark.py`); `batch_spark.py` runs the aggregates that cannot take a row back per
micro-batch."""
