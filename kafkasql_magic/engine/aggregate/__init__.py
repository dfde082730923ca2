"""A stream's GROUP BY: the aggregate functions (`functions_spark.py`), the per-batch aggregation
(`group_by_spark.py`); and GROUP BY that writes one change per input record: incremental accumulators (`accumulators.py`),
when they apply (`per_record.py`) and the keyed state that runs them (`keyed_spark.py`)."""
