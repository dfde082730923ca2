"""Expressions: ksql's and Materialize's AST -> Spark columns. `compile_spark.py` the compiler
(`Scope`, `JoinScope`, `Compiler`; a function call through the query's dialect, whose table is
`engine/functions/`), `jsonb_spark.py` Materialize's jsonb operators, `lambdas_spark.py` ksqlDB's
lambda functions. Nothing is imported here, so each module imports on its own."""
