"""Materialize's ORDER BY in snapshot queries: `keys.py` which result column a sort key names
(pure), `sort_spark.py` the rows sorted on Spark before LIMIT takes the first n. Nothing is
imported here, so each module imports on its own."""
