"""GROUP BY that writes one change per input record: incremental accumulators (`accumulators.py`),
when they apply (`per_record.py`) and the keyed state that runs them (`keyed_spark.py`)."""
