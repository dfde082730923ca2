"""When Spark's JVM has exited under a kernel: saying why, and starting afresh.

A JVM that dies (out of memory, a crash in native code, killed) leaves PySpark answering every
call with a py4j network error and a long traceback that names no cause. The JVM's exit code,
its crash report (`-XX:ErrorFile`, written to `crash_report_path`) and Spark's log tell the
cause; `forget()` drops PySpark's hold on the dead JVM so that the next statement starts a new
session.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from pathlib import Path

#: Where the JVM writes its crash report (`%p`: its process id); set in `sparkenv.LOCAL_CONF`.
CRASH_REPORT = str(Path(tempfile.gettempdir()) / "kafkasql-jvm-crash-%p.log")

#: What an exit code says; Spark's own codes are `SparkExitCode`'s.
MEANINGS = {
    0: "it ended (its standard input, the kernel's pipe to it, was closed)",
    50: "an uncaught exception in one of its threads",
    52: "it ran out of memory (java.lang.OutOfMemoryError; spark.driver.memory sets its heap)",
    134: "it crashed (SIGABRT)",
    -6: "it crashed (SIGABRT)",
    -9: "it was killed (SIGKILL; the system's out-of-memory killer sends it too)",
    137: "it was killed (SIGKILL; the system's out-of-memory killer sends it too)",
    -15: "it was stopped (SIGTERM)",
    143: "it was stopped (SIGTERM)",
}


def process(spark):
    """The process of `spark`'s JVM as PySpark launched it, or None (one that PySpark did not
    launch, as under `spark-submit`). Each session asks about its own JVM: after one has died and
    a new session started, PySpark's class-level gateway is the new one."""
    return getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)


def exit_code(spark) -> int | None:
    """`spark`'s JVM's exit code if it has exited, else None."""
    proc = process(spark)
    return None if proc is None else proc.poll()


def died(exc: BaseException, spark, within: float = 3.0) -> int | None:
    """`spark`'s JVM's exit code if `exc` came of its death: an error on py4j's connection is
    waited on for `within` s, as a JVM that is dying closes its sockets before it has exited."""
    proc = process(spark)
    if proc is None:
        return None
    if _lost_connection(exc):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(within)
    return proc.poll()


def _lost_connection(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ConnectionError) or type(exc).__name__ == "Py4JNetworkError":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def crash_report_path(pid: int) -> Path:
    return Path(CRASH_REPORT.replace("%p", str(pid)))


def explain(code: int, pid: int | None, log: Path | None, *, restarts: bool = True) -> str:
    """What the user reads: the exit code and what it means, the crash report's summary lines
    (its problematic frame) and the log's last error lines."""
    lines = [f"Spark's JVM exited with code {code}: {MEANINGS.get(code, 'see its log')}."]
    report = crash_report_path(pid) if pid is not None else None
    if report is not None and report.exists():
        summary = [line.rstrip() for line in report.read_text(errors="replace").splitlines()[:30]
                   if line.startswith("#  ") or line.startswith("# C ") or line.startswith("# J ")
                   or line.startswith("# V ")]
        lines += ["Its crash report, " + str(report) + ":", *summary]
    if log is not None and log.exists():
        errors = [line.rstrip() for line in _tail(log).splitlines()
                  if "OutOfMemoryError" in line or line.startswith("Exception in thread")
                  or " ERROR " in line]
        if errors:
            lines += [f"The last errors in Spark's log, {log}:", *errors[-5:]]
        else:
            lines.append(f"Spark's log: {log}")
    lines.append("Its queries stopped with it; " + ("the next statement starts a new Spark session." if restarts else
                 "make a new Spark session and pass it to kafkasql_magic.connect(spark=...)."))
    return "\n".join(lines)


def _tail(path: Path, size: int = 64_000) -> str:
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read().decode(errors="replace")


def forget(spark) -> None:
    """Drop PySpark's hold on `spark`'s JVM, which has exited, so that the next session launches
    a new one; a newer JVM that another session started already is left alone."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with SparkContext._lock:
        if SparkContext._gateway is not spark.sparkContext._gateway:
            return
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
