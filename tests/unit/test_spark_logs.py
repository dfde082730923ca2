"""A child started inside `quietly()` (as Spark's JVM is) writes its stderr to the log file for good."""

import os
import subprocess
import sys

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
