"""Cold start: from `%load_ext kafkasql_magic` to a kernel's first row, as Run All meets it.

    python bench/first_row.py [--rounds 1] [--out bench/results/first_row.json]

Each round starts a fresh Jupyter kernel (a cold JVM) and runs a notebook's first cells back to
back, as Run All does: `%load_ext kafkasql_magic` + `%kstream_local start`, a cell producing
three records, `CREATE STREAM`, then `SELECT ... EMIT CHANGES LIMIT 1`. The figure is the time
from sending the first cell to the query's result arriving (its rows shown); the same query run
again (`warm_query_s`, Spark up) tells the JVM's start from the query's own work. Per mode:
  background  Spark starts in the background when the extension loads (the default)
  on-demand   `start_spark_on_load = False`: Spark starts when the first query needs it
The modes alternate within a round so that the machine's load touches both alike. `--pause S`
sends the query S seconds after the cells before it have ended, as a user typing it would (the
figure is still from the query's cell being sent to its first row).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest import machine_facts  # noqa: E402  (bench/ is the script's folder)

QUERY = 3  # the cell whose first row is timed
ON_DEMAND = "get_ipython().config.KStreamMagics.start_spark_on_load = False\n"
CELLS = [
    "%load_ext kafkasql_magic\n%kstream_local start",
    "import json\n"
    "from kafkasql_magic.kafka.producer import produce\n"
    "from kafkasql_magic.local import stack\n"
    "produce(stack.default().bootstrap_servers, 'clicks', "
    "[{'key': str(i).encode(), 'value': json.dumps({'n': i})} for i in range(3)], create_partitions=1)",
    "%%kstream\nSET 'auto.offset.reset'='earliest';\n"
    "CREATE STREAM clicks (k STRING KEY, n INT) WITH (kafka_topic='clicks', value_format='JSON');",
    "%%kstream\nSELECT k, n FROM clicks EMIT CHANGES LIMIT 1;",
    "%%kstream\nSELECT k, n FROM clicks EMIT CHANGES LIMIT 1;",  # the same query again, Spark warm
]


def one_run(mode: str, timeout: float = 600, pause: float = 0.0) -> dict:
    """A fresh kernel, the cells in order; seconds from the first cell sent to each cell's end."""
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        cells = list(CELLS)
        if mode == "on-demand":
            cells[0] = ON_DEMAND + cells[0]
        started = time.monotonic()
        ids = [client.execute(cell) for cell in cells[:QUERY]]  # queued at once, as Run All queues them
        ends: dict[str, float] = {}
        if pause:
            _wait_idle(client, ids, ends, started + timeout)
            time.sleep(pause)
        query_sent = time.monotonic() if pause else started
        ids += [client.execute(cell) for cell in cells[QUERY:]]
        result_at = None
        deadline = started + timeout
        while len(ends) < len(ids):
            try:
                msg = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{mode}: no answer within {timeout:g} s") from None
            parent = msg["parent_header"].get("msg_id")
            kind = msg["msg_type"]
            if kind == "error":
                raise RuntimeError(f"{mode}: cell {ids.index(parent) + 1} failed: {msg['content']['evalue']}")
            if kind == "execute_result" and parent == ids[QUERY]:
                result_at = time.monotonic()
            if kind == "status" and msg["content"]["execution_state"] == "idle" and parent in ids:
                ends[parent] = time.monotonic()
        return {"mode": mode, "first_row_s": round((result_at or ends[ids[QUERY]]) - query_sent, 2),
                "warm_query_s": round(ends[ids[-1]] - ends[ids[QUERY]], 2),
                "cells_end_s": [round(ends[i] - started, 2) for i in ids]}
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _wait_idle(client, ids: list[str], ends: dict[str, float], deadline: float) -> None:
    """Read the kernel's messages until the cells `ids` have ended."""
    while len(ends) < len(ids):
        msg = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        parent = msg["parent_header"].get("msg_id")
        if msg["msg_type"] == "error":
            raise RuntimeError(f"cell {ids.index(parent) + 1} failed: {msg['content']['evalue']}")
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle" and parent in ids:
            ends[parent] = time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds between the cells before the query and the query (0: Run All)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "first_row.json"))
    args = parser.parse_args()
    facts = {**machine_facts(), "cores": os.cpu_count(), "load_average_at_start": os.getloadavg(),
             "pause_before_query_s": args.pause}
    runs = []
    for round_ in range(args.rounds):
        for mode in (("background", "on-demand") if round_ % 2 == 0 else ("on-demand", "background")):
            run = one_run(mode, pause=args.pause)
            run["load_average"] = os.getloadavg()[0]
            print(json.dumps(run), flush=True)
            runs.append(run)
    best = {mode: min(r["first_row_s"] for r in runs if r["mode"] == mode) for mode in ("background", "on-demand")}
    Path(args.out).write_text(json.dumps({"machine": facts, "runs": runs, "best_first_row_s": best}, indent=2) + "\n")
    print(json.dumps(best))


if __name__ == "__main__":
    main()
