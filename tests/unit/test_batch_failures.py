"""A micro-batch that fails hands Spark its traceback without the Java stack frames: Spark
4.3 matches that text with a per-character recursive regex (a long stack trace overflowed
the stream thread's stack and hid the cause), and still reads it to tell a stop from a
failure. No Spark session."""

from __future__ import annotations

import re

import pytest

from kafkasql_magic.errors import KStreamError
from kafkasql_magic.runtime import BATCH_FAILURE_CHARS, BatchFailed, failure_message, without_java_frames

#: StreamExecution.PROXY_ERROR in Spark 4.3: the failure text of a stopped query's batch
SPARK_PROXY_ERROR = re.compile(r"py4j.protocol.Py4JJavaError: An error occurred while calling((.|\r\n|\r|\n)*)"
                               r"(java.lang.InterruptedException|java.io.InterruptedIOException|"
                               r"java.nio.channels.ClosedByInterruptException)")

JAVA_TRACE = ("An error occurred while calling o412.save.\n"
              ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 9.0 failed\n"
              + "".join(f"\tat org.apache.spark.scheduler.DAGScheduler.step{i}(DAGScheduler.scala:{i})\n"
                        for i in range(400))
              + "Caused by: {cause}\n"
              + "".join(f"\tat java.base/java.lang.Thread.frame{i}(Thread.java:{i})\n" for i in range(200))
              + "\t... 37 more\n")


class Py4JJavaError(Exception):
    """Stands for py4j's: its text is the Java exception's with its stack trace."""

    __module__ = "py4j.protocol"


def _handed_to_spark(error: BaseException) -> str:
    def on_batch(batch, batch_id):
        raise error

    with pytest.raises(BatchFailed) as info:
        without_java_frames(on_batch)(None, 7)
    assert info.value.__suppress_context__  # the original is not printed again below it
    return str(info.value)


def test_a_failed_batch_reaches_spark_with_its_exception_lines_and_python_frames_but_no_java_frames():
    text = _handed_to_spark(Py4JJavaError(JAVA_TRACE.format(cause="java.net.SocketTimeoutException: Accept timed out")))
    assert "\tat " not in text and "... 37 more" not in text
    assert "Job aborted due to stage failure: Task 0 in stage 9.0 failed" in text
    assert "Caused by: java.net.SocketTimeoutException: Accept timed out" in text
    assert "in on_batch" in text  # the Python frame that raised
    assert len(text) < 2000 < len(JAVA_TRACE)
    assert SPARK_PROXY_ERROR.search(text) is None  # a failure, not a stop


def test_spark_still_reads_an_interrupted_batch_as_a_stop():
    text = _handed_to_spark(Py4JJavaError(JAVA_TRACE.format(cause="java.lang.InterruptedException")))
    assert SPARK_PROXY_ERROR.search(text)


def test_our_error_raised_in_a_batch_is_still_the_queries_message():
    text = _handed_to_spark(KStreamError("Cannot write topic 'out' partition 0: the broker refused the record"))
    spark_failure = RuntimeError(f"[STREAM_FAILED] Query terminated with exception: Return Message: {text}")
    assert failure_message(spark_failure) == "Cannot write topic 'out' partition 0: the broker refused the record"


def test_a_very_long_failure_keeps_its_head_and_its_innermost_cause():
    lines = "\n".join(f"org.example.Wrapped{i}: layer {i}" for i in range(3000))
    text = _handed_to_spark(Py4JJavaError(f"{lines}\nCaused by: java.io.IOException: disk full"))
    assert len(text) < BATCH_FAILURE_CHARS + 100
    assert "Py4JJavaError: org.example.Wrapped0: layer 0" in text
    assert text.endswith("Caused by: java.io.IOException: disk full")
    assert "characters ...]" in text
