"""CPU seconds and peak RSS of a process tree, sampled (psutil).

A process's `children_*` times count only children it waited for: a Python worker whose parent
(Spark's worker daemon) was killed is never waited for, so summing the tree's times at two
moments can lose a whole worker's CPU, or go backwards. The sampler remembers every process it
has seen (pid and start time) with its latest user + system time, so a process that ends still
counts up to its last sample (at most `interval` is lost per process)."""

from __future__ import annotations

import os
import threading


class TreeSampler:
    def __init__(self, pid: int | None = None, interval: float = 0.2):
        self.pid, self.interval = pid or os.getpid(), interval
        self.base: dict = {}
        self.last: dict = {}
        self.peak_rss = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.sample(first=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self, first: bool = False) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            return
        with self._lock:
            self._add(procs, first)

    def _add(self, procs, first: bool) -> None:
        import psutil

        rss = 0
        for proc in procs:
            try:
                key = (proc.pid, proc.create_time())
                t = proc.cpu_times()
                rss += proc.memory_info().rss
            except psutil.Error:
                continue
            self.last[key] = t.user + t.system
            self.base.setdefault(key, self.last[key] if first else 0.0)
        self.peak_rss = max(self.peak_rss, rss)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def cpu(self) -> float:
        """CPU seconds of the tree since the sampler started (samples once more first)."""
        self.sample()
        with self._lock:
            return sum(self.last[k] - self.base[k] for k in self.last)

    def stop(self) -> float:
        cpu = self.cpu()
        self._stop.set()
        self._thread.join()
        return cpu
