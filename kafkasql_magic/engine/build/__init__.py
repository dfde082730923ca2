"""Build: a QueryPlan -> Spark frames. `query_spark.py` builds a plan's operator tree node by
node through the families' steps (`engine/decode/`, `engine/expressions/`, `engine/aggregate/`,
the join folders, ...). Nothing is imported here, so that a family's step, importing a module of
this package, does not import the builder that imports it."""
