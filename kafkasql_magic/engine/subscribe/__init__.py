"""Materialize's SUBSCRIBE: `rules.py` which diffs a SUBSCRIBE's rows become, its WITH options and
refusals (pure), `frame_spark.py` the frame the driver reads (time, code, the columns)."""
