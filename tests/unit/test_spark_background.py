"""Spark started in the background when the extension loads: the first query waits for that start
(saying so) instead of starting a second one. No Spark: `local_spark` is replaced."""

from __future__ import annotations

import threading

import pytest
from IPython.core.interactiveshell import InteractiveShell

from kafkasql_magic import sparkenv
from kafkasql_magic.session import Session


@pytest.fixture
def slow_spark(monkeypatch):
    """A `local_spark` that takes until `release` is set; its calls counted."""
    release, calls = threading.Event(), []

    def local_spark(master=None):
        calls.append(threading.current_thread().name)
        assert release.wait(10)
        return "spark"

    monkeypatch.setattr(sparkenv, "local_spark", local_spark)
    monkeypatch.setattr(sparkenv, "_background", None)
    monkeypatch.setattr(sparkenv, "_background_since", None)
    monkeypatch.setattr(sparkenv, "running", lambda: False)
    monkeypatch.setattr(sparkenv, "warm_up", lambda spark: None)
    yield release, calls
    release.set()


class Feedback:
    def __init__(self):
        self.said = []

    def spark_starting(self, since, *, background):
        self.said.append((since, background))

    def spark_started(self):
        self.said.append("started")


def test_the_first_query_waits_for_the_background_start_and_says_so(slow_spark):
    release, calls = slow_spark
    assert sparkenv.start_in_background() and not sparkenv.start_in_background()  # one start only
    since = sparkenv.background_start()
    assert since is not None
    session = Session("127.0.0.1:9")
    session.feedback = Feedback()
    got = []
    waiter = threading.Thread(target=lambda: got.append(session.spark))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and session.feedback.said == [(since, True)]  # still starting: it says since when
    release.set()
    waiter.join(10)
    assert got == ["spark"] and sparkenv.background_start() is None and session.feedback.said[-1] == "started"
    assert calls[0] == "kafkasql-spark-start"  # the foreground's call found the background's session


def test_the_first_query_does_not_wait_for_the_warm_up(monkeypatch, slow_spark):
    release, _ = slow_spark
    warming, warmed = threading.Event(), threading.Event()

    def warm_up(spark):
        warming.set()
        assert warmed.wait(10)

    monkeypatch.setattr(sparkenv, "warm_up", warm_up)
    sparkenv.start_in_background()
    release.set()
    assert warming.wait(10)
    session = Session("127.0.0.1:9")
    got = []
    waiter = threading.Thread(target=lambda: got.append(session.spark))
    waiter.start()
    waiter.join(5)
    warmed.set()
    assert got == ["spark"], "the first query waited for the background warm-up"


def test_without_a_background_start_the_first_query_says_spark_is_starting(slow_spark):
    release, _ = slow_spark
    release.set()
    session = Session("127.0.0.1:9")
    session.feedback = Feedback()
    assert session.spark == "spark"
    assert session.feedback.said[1:] == ["started"] and session.feedback.said[0][1] is False


def test_a_failed_background_start_leaves_the_foreground_to_start_and_raise(monkeypatch, slow_spark):
    def no_java(master=None):
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(sparkenv, "local_spark", no_java)
    sparkenv.start_in_background()
    sparkenv.wait_for_background_start()
    with pytest.raises(RuntimeError, match="Java gateway"):
        Session("127.0.0.1:9").spark


@pytest.mark.parametrize("in_kernel, enabled, started", [(True, True, True), (True, False, False),
                                                         (False, True, False)])
def test_loading_the_extension_starts_spark_in_a_kernel_unless_told_not_to(monkeypatch, in_kernel, enabled, started):
    from kafkasql_magic import spark_logs

    begun = []
    monkeypatch.setattr(spark_logs, "in_a_kernel", lambda: in_kernel)
    monkeypatch.setattr(sparkenv, "start_in_background", lambda show_logs=False: begun.append(show_logs) or True)
    ip = InteractiveShell.instance()
    ip.config.KStreamMagics.start_spark_on_load = enabled
    try:
        ip.run_line_magic("load_ext", "kafkasql_magic")
        assert begun == ([False] if started else [])
    finally:
        ip.run_line_magic("unload_ext", "kafkasql_magic")
        del ip.config.KStreamMagics["start_spark_on_load"]


@pytest.mark.parametrize("waiting", [False, True])
def test_the_warm_up_runs_its_micro_batch_only_while_no_query_waits(monkeypatch, waiting):
    done = []

    class Frame:
        def mapInArrow(self, function, schema):
            done.append(function.__name__)
            return self

        def collect(self):
            return []

    class Spark:
        class sparkContext:
            defaultParallelism = 2

        def range(self, start, end, numPartitions):
            return Frame()

    monkeypatch.setattr(sparkenv, "_query_waiting", threading.Event())
    monkeypatch.setattr(sparkenv, "_one_micro_batch", lambda spark: done.append("micro-batch"))
    if waiting:
        sparkenv.wait_for_background_start()  # what a query asking for the session calls
    sparkenv.warm_up(Spark())
    assert done == ["_import_worker_modules"] + ([] if waiting else ["micro-batch"])
