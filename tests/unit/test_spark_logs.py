"""A child started inside `quietly()` (as Spark's JVM is) writes its stderr to the log file for good."""

import os
import subprocess
import sys

import pytest

from kafkasql_magic.spark_logs import quietly


def test_a_child_started_quietly_keeps_the_log_file_as_stderr(tmp_path, monkeypatch, capfd):
    log = tmp_path / "spark.log"
    monkeypatch.setenv("KAFKASQL_SPARK_LOG", str(log))
    with quietly():
        child = subprocess.Popen([sys.executable, "-c",
                                  "import sys, time; time.sleep(0.5); print('WARN log4j', file=sys.stderr)"])
    os.write(2, b"kernel stderr\n")  # the kernel's own descriptor is back
    child.wait(10)
    assert "WARN log4j" in log.read_text() and "kernel stderr" not in log.read_text()
    captured = capfd.readouterr()
    assert "kernel stderr" in captured.err and "WARN log4j" not in captured.err


class _KernelStderr:
    """Stands in for ipykernel's OutStream: what a Jupyter kernel's sys.stderr is."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


_KernelStderr.__module__ = "ipykernel.iostream"


@pytest.mark.parametrize("in_kernel, show, quiet", [(True, False, True), (True, True, False), (False, False, False)])
def test_a_session_quiets_sparks_start_in_a_notebook_only(tmp_path, monkeypatch, capfd, in_kernel, show, quiet):
    """ks.connect() in a notebook (no magic) keeps Spark's start-up lines out of the cell too."""
    from kafkasql_magic import sparkenv
    from kafkasql_magic.session import Session

    log = tmp_path / "spark.log"
    monkeypatch.setenv("KAFKASQL_SPARK_LOG", str(log))
    if in_kernel:
        monkeypatch.setattr(sys, "stderr", _KernelStderr())
    jvm = "import sys, time; time.sleep(0.3); print('WARN NativeCodeLoader', file=sys.stderr)"
    monkeypatch.setattr(sparkenv, "local_spark", lambda: subprocess.Popen([sys.executable, "-c", jvm]))
    session = Session("127.0.0.1:1")
    session.show_spark_logs = show
    session.spark.wait(10)  # the stand-in JVM
    logged = log.exists() and "WARN NativeCodeLoader" in log.read_text()
    shown = "WARN NativeCodeLoader" in capfd.readouterr().err
    assert (logged, shown) == (quiet, not quiet)
