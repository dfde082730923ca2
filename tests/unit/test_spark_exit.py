"""What the user reads when Spark's JVM has exited (no Spark: a crash report and a log made here)."""

from __future__ import annotations

from kafkasql_magic import spark_exit


def test_a_crash_says_its_code_its_problematic_frame_and_where_its_report_is(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_exit, "CRASH_REPORT", str(tmp_path / "crash-%p.log"))
    (tmp_path / "crash-4242.log").write_text(
        "#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n"
        "#  SIGSEGV (0xb) at pc=0x00007f8a077d2743, pid=4242, tid=77\n#\n"
        "# Problematic frame:\n# C  [librocksdbjni.so+0x3d2743]  rocksdb::DBImpl::GetProperty+0x57\n#\n"
        "---------------  S U M M A R Y ------------\n")
    said = spark_exit.explain(134, 4242, None)
    assert said.splitlines() == [
        "Spark's JVM exited with code 134: it crashed (SIGABRT).",
        f"Its crash report, {tmp_path / 'crash-4242.log'}:",
        "#  SIGSEGV (0xb) at pc=0x00007f8a077d2743, pid=4242, tid=77",
        "# C  [librocksdbjni.so+0x3d2743]  rocksdb::DBImpl::GetProperty+0x57",
        "Its queries stopped with it; the next statement starts a new Spark session."]


def test_out_of_memory_names_the_error_the_log_has_last(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("26/11/28 12:59:15 WARN Something: fine\n"
                   "26/11/28 12:59:16 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)\n"
                   "java.lang.OutOfMemoryError: Java heap space\n"
                   "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)\n")
    said = spark_exit.explain(52, None, log, restarts=False).splitlines()
    assert said[0] == ("Spark's JVM exited with code 52: it ran out of memory (java.lang.OutOfMemoryError; "
                       "spark.driver.memory sets its heap).")
    assert said[1:4] == [f"The last errors in Spark's log, {log}:",
                         "26/11/28 12:59:16 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)",
                         "java.lang.OutOfMemoryError: Java heap space"]
    assert said[-1].endswith("make a new Spark session and pass it to kafkasql_magic.connect(spark=...).")


def test_an_unknown_code_points_at_the_log(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("nothing amiss\n")
    assert spark_exit.explain(3, None, log).splitlines()[:2] == [
        "Spark's JVM exited with code 3: see its log.", f"Spark's log: {log}"]


def test_only_a_lost_connection_is_waited_on_as_a_death():
    class Py4JNetworkError(Exception):
        pass

    try:
        try:
            raise Py4JNetworkError("Answer from Java side is empty")
        except Py4JNetworkError:
            raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionRefusedError as exc:
        refused = exc
    assert spark_exit._lost_connection(refused)
    assert spark_exit._lost_connection(RuntimeError("x").with_traceback(None)) is False
    wrapped = RuntimeError("query failed")
    wrapped.__cause__ = Py4JNetworkError("empty")
    assert spark_exit._lost_connection(wrapped)


def test_forgetting_a_dead_jvm_leaves_a_newer_one_alone():
    from types import SimpleNamespace

    from pyspark import SparkContext

    dead = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=object()))
    newer = object()
    saved = SparkContext._gateway, SparkContext._jvm, SparkContext._active_spark_context
    try:
        SparkContext._gateway = newer  # another session has started a new JVM already
        spark_exit.forget(dead)
        assert SparkContext._gateway is newer
        SparkContext._gateway = dead.sparkContext._gateway
        spark_exit.forget(dead)
        assert SparkContext._gateway is None
    finally:
        SparkContext._gateway, SparkContext._jvm, SparkContext._active_spark_context = saved
