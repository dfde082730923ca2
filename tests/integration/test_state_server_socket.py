"""The keyed-state steps' state servers listen on Unix domain sockets in the session the project
starts (`sparkenv.LOCAL_CONF`, which the tests' session uses too). A TCP state server takes the
first connection to reach its port: a local Kafka client retrying a port it once knew could take
it, and the step then waited forever with the query RUNNING and writing nothing."""

from __future__ import annotations

import socket


def test_a_keyed_state_step_talks_to_its_state_server_over_a_unix_socket(spark, tmp_path):
    from pyspark.sql import types as T
    from pyspark.sql.streaming import StatefulProcessor

    seen = tmp_path / "families"
    seen.mkdir()

    class Family(StatefulProcessor):
        def init(self, handle) -> None:
            family = handle._statefulProcessorApiClient._client_socket.family
            (seen / str(id(self))).write_text(socket.AddressFamily(family).name)

        def handleInputRows(self, key, rows, timerValues):
            from pyspark.sql import Row

            yield Row(k=key[0], n=sum(1 for _ in rows))

        def close(self) -> None:
            pass

    source = tmp_path / "in"
    spark.range(6).selectExpr("id % 3 AS k").write.parquet(str(source))
    out = T.StructType([T.StructField("k", T.LongType()), T.StructField("n", T.LongType())])
    frame = (spark.readStream.schema("k BIGINT").parquet(str(source)).groupBy("k")
             .transformWithState(Family(), out, "Append", "None"))
    query = (frame.writeStream.format("memory").queryName("state_server_socket")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    assert sorted(tuple(r) for r in spark.sql("SELECT k, n FROM state_server_socket").collect()) == [(0, 2), (1, 2), (2, 2)]
    families = {p.read_text() for p in seen.iterdir()}
    assert families == {"AF_UNIX"}
