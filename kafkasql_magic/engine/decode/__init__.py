"""Decoding: a source's raw Kafka records -> its logical rows (`rows_spark.py`), with the
formats of `formats/` and the columns the reader's worker decoded (`kafka/worker_decoding.py`).
Nothing is imported here, so the module imports on its own."""
