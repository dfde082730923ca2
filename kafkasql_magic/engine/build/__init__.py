"""Build: a QueryPlan -> Spark frames (decoding, expressions, joins, aggregation). `query.py`
builds a plan's operator tree through the families' steps; the other modules are the helpers
those steps share. Nothing is imported here, so that a family's step, importing a helper of
this package, does not import the builder that imports it."""
