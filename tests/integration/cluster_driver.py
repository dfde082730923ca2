"""One `local-cluster[2,1,1024]` Spark driver (two executor JVMs) serving the executor tests.

Starting a cluster costs a driver JVM, two executor JVMs and their Python workers: tens of
seconds on a loaded 2-core machine. The tests that prove reading, decoding and writing on
executors share this one process. Each request is a JSON line on stdin, {"script", "argv"};
the script runs with `spark` (the cluster session) in its globals and prints its results;
"CLUSTER-DONE <rc>" ends its output (rc 1 after an exception, whose traceback is printed).
"""

import json
import os
import sys
import traceback

from pyspark.sql import SparkSession

from kafkasql_magic.sparkenv import prepare

DONE = "CLUSTER-DONE"


def cluster_session():
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.executor.memory", "512m")
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"]).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return prepare(spark)  # the ksql SQL settings, the kafkasql source and sink


def serve(spark) -> None:
    for line in sys.stdin:
        request = json.loads(line)
        sys.argv = ["cluster-script", *request["argv"]]
        rc = 0
        try:
            exec(compile(request["script"], "cluster-script", "exec"), {"spark": spark, "__name__": "__main__"})
        except BaseException:  # noqa: BLE001 - reported to the test, the driver serves the next one
            traceback.print_exc(file=sys.stdout)
            rc = 1
        print(f"{DONE} {rc}", flush=True)


if __name__ == "__main__":
    session = cluster_session()
    try:
        serve(session)
    finally:
        session.stop()
