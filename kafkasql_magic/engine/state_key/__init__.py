"""The grouping keys of Spark's keyed state: flat columns only (`flat_spark.py`)."""
