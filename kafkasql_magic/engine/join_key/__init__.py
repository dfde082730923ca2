"""A join's key, after any kind of join (Spark's, stream-stream, stream-table, table-table,
Materialize's with diffs): `column_spark.py` computes the key that `engine/analysis/join_key.py`
decides, as a column of the joined frame. Nothing is imported here, so the module imports on its own."""
