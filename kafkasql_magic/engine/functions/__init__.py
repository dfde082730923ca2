"""Scalar functions: one table, name -> Spark expression builder (`catalogue_spark.FUNCTIONS`),
made of one table per kind of value; Materialize's PostgreSQL functions in `postgres_spark.py`."""
