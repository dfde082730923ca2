"""Materialize's joins in SUBSCRIBE, whole collections joined as multisets whose result is a stream
of diffs: `rules.py` which queries join this way, their ON equalities and refusals (pure),
`join_spark.py` the join's keyed state on Spark."""
