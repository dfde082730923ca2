"""Peers benchmark: the same five jobs on this project, quixstreams, Pathway and a plain
confluent-kafka loop, over the same records on the embedded broker, one after the other.

    python bench/peers.py [--records 200000] [--systems project,quix,pathway,loop] [--jobs a,b,c,d,e]
                          [--peer-python PATH] [--timeout 900] [--out bench/results/peers.json]

Inputs (4 partitions each, ~100-byte JSON values): `orders` (N records keyed by customer, 1,000
customers, record timestamps 1 ms apart), `customers` (the 1,000-row table, written before the
orders), `orders_cl` (a changelog keyed by order id: N/2 orders, then N/2 updates of them with
another customer and quantity) and `payments` (N/2 records keyed by order id).

  a  filter + project: orders WHERE qty > 1 -> orderid, qty * price
  b  10 s TUMBLING COUNT/SUM(qty) per customer (every update written, the last one per window final)
  c  orders enriched from the customers table (stream-table join)
  d  COUNT/SUM(qty) per customer over the orders_cl changelog read as a TABLE (updates retract)
  e  the orders_cl table joined with the payments table on the order id (table-table join)

Each system runs each job in a process of its own (the project: Session.sql persistent queries on
local[cores] Spark; quixstreams; Pathway; the loop for a and b only), started after the inputs are
written; its start-up (Spark's included) is not timed: the clock starts when the process says the
job is about to run. This process reads the job's sink topic from its start and folds what
arrives into the job's result (the last value per key; Pathway's +1/-1 diffs applied), and stops
the clock when the result equals the one computed here from the inputs. rec/s = input records of
the job / that time; CPU seconds of the job's process tree per million input records; peak RSS of
the tree (sampled every 0.2 s: bench/proctree.py). The jobs as each system runs them: bench/peer_jobs.py. quixstreams and Pathway are not runtime dependencies; they run in
`--peer-python` (an interpreter with the `[bench]` extra: they pin older confluent-kafka and
pyarrow than the project's, so keep them in a virtual environment of their own).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUSTOMERS = 1000
T0 = 1_700_000_000_000  # a multiple of 10 s
JOB_RECORDS = {"a": lambda n: n, "b": lambda n: n, "c": lambda n: n + CUSTOMERS, "d": lambda n: n,
               "e": lambda n: n + n // 2}
LOOP_JOBS = {"a", "b"}


# ---------------------------------------------------------------- inputs and expected results

def order(i: int) -> dict:
    pad = "x" * 24
    return {"orderid": f"o{i}", "customer": f"c{i * 7 % CUSTOMERS}", "item": f"item-{i % 50}",
            "qty": i % 5, "price": round(1.5 + i % 20, 2), "ts": T0 + i, "pad": pad}


def changelog(i: int, n: int) -> dict:
    half = n // 2
    j = i if i < half else i - half
    return {"orderid": f"o{j}", "customer": f"c{(i * 13 + i // 7) % CUSTOMERS}", "qty": i % 4 + 1,
            "price": 2.5, "ts": T0 + i, "pad": "x" * 40}


def payment(j: int) -> dict:
    return {"orderid": f"o{j}", "amount": round(j % 97 + 0.25, 2), "method": "card", "pad": "x" * 40}


def write_inputs(bootstrap: str, n: int) -> None:
    from kafkasql_magic.local import produce

    dumps = lambda v: json.dumps(v, separators=(",", ":")).encode()  # noqa: E731
    produce(bootstrap, "customers", ({"key": f"c{c}".encode(), "timestamp": T0 - 60_000,
                                      "value": dumps({"cid": f"c{c}", "name": f"name-{c}", "region": f"r{c % 9}"})}
                                     for c in range(CUSTOMERS)), create_partitions=4)
    produce(bootstrap, "orders", ({"key": (o := order(i))["customer"].encode(), "timestamp": o["ts"], "value": dumps(o)}
                                  for i in range(n)), create_partitions=4)
    produce(bootstrap, "orders_cl", ({"key": (o := changelog(i, n))["orderid"].encode(), "timestamp": o["ts"],
                                      "value": dumps(o)} for i in range(n)), create_partitions=4)
    produce(bootstrap, "payments", ({"key": f"o{j}".encode(), "timestamp": T0 + j, "value": dumps(payment(j))}
                                    for j in range(n // 2)), create_partitions=4)


def expected(job: str, n: int) -> dict:
    if job == "a":
        return {o["orderid"]: (round(o["qty"] * o["price"], 4),) for o in map(order, range(n)) if o["qty"] > 1}
    if job == "b":
        out: dict = {}
        for o in map(order, range(n)):
            key = (o["customer"], o["ts"] // 10_000 * 10_000)
            c, q = out.get(key, (0, 0))
            out[key] = (c + 1, q + o["qty"])
        return out
    if job == "c":
        return {o["orderid"]: (f"name-{o['customer'][1:]}", o["qty"]) for o in map(order, range(n))}
    latest = {o["orderid"]: o for o in (changelog(i, n) for i in range(n))}
    if job == "d":
        out = {}
        for o in latest.values():
            c, q = out.get(o["customer"], (0, 0))
            out[o["customer"]] = (c + 1, q + o["qty"])
        return out
    return {j: (latest[j]["customer"], latest[j]["qty"], payment(int(j[1:]))["amount"])
            for j in (f"o{k}" for k in range(n // 2)) if j in latest}


def canonical(job: str, v: dict, key: bytes | None = None):
    """(identity, content) of an output value (field names lower-cased), as in `expected`."""
    v = {k.lower(): x for k, x in v.items()}
    if job == "b" and "ws" not in v and key is not None and len(key) > 8:  # a windowed key: start in its last 8 bytes
        v["ws"] = int.from_bytes(key[-8:], "big")
    if job == "a":
        return v["orderid"], (round(float(v["total"]), 4),)
    if job == "b":
        return (v["cust"], int(v["ws"])), (int(v["n"]), int(v["q"]))
    if job == "c":
        return v["orderid"], (v["name"], int(v["qty"]))
    if job == "d":
        return v["cust"], (int(v["n"]), int(v["q"]))
    return v["oid"], (v["customer"], int(v["qty"]), round(float(v["amount"]), 2))


class Folded:
    """The result so far: the last value per key, or Pathway's diffs applied."""

    def __init__(self, job: str, diffs: bool):
        self.job, self.diffs, self.rows, self.by_key, self.counts, self.records = job, diffs, {}, {}, {}, 0

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.records += 1
        if value is None:  # a tombstone: the key's row is gone
            ident = self.by_key.pop(key, None)
            self.rows.pop(ident, None)
            return
        v = json.loads(value)
        diff = v.pop("diff", 1) if self.diffs else 1
        v.pop("time", None)
        try:
            ident, content = canonical(self.job, v, key)
        except (KeyError, TypeError, ValueError) as e:
            raise RuntimeError(f"job {self.job}: an output record not as expected ({e!r}): key {key!r}, value {v}") from e
        if self.diffs:
            c = self.counts[(ident, content)] = self.counts.get((ident, content), 0) + diff
            if c > 0:
                self.rows[ident] = content
            elif self.rows.get(ident) == content:
                del self.rows[ident]
            return
        self.by_key[key] = ident
        self.rows[ident] = content

    def result(self) -> dict:
        if self.job == "d":
            return {k: r for k, r in self.rows.items() if r[0] != 0}
        return self.rows


# ---------------------------------------------------------------- measuring a job's process

def run_job(python: str, system: str, job: str, bootstrap: str, n: int, timeout: float) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from kafkasql_magic.local import create_topic
    from proctree import TreeSampler

    out = f"out-{system}-{job}-{os.getpid()}"
    create_topic(bootstrap, out, 4)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"peers-{out}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(out, p, OFFSET_BEGINNING) for p in range(4)])
    want, folded = expected(job, n), Folded(job, diffs=system == "pathway")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python)
    work = tempfile.mkdtemp(prefix=f"peers-{system}-{job}-")
    log = open(Path(work) / "child.log", "w+")
    child = subprocess.Popen([python, str(Path(__file__).resolve()), "--child", system, job, bootstrap, out, str(n), work],
                             env=env, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    result = {"system": system, "job": job, "input_records": JOB_RECORDS[job](n)}
    try:
        line = child.stdout.readline()  # READY once the job is about to run (after what it printed before)
        while line and not line.startswith("READY"):
            line = child.stdout.readline()
        if not line.startswith("READY"):
            log.seek(0)
            raise RuntimeError(f"{system} {job}: the job did not start:\n{log.read()[-3000:]}")
        sampler = TreeSampler(child.pid)
        started, last_check, done = time.perf_counter(), 0.0, False
        first = None
        while time.perf_counter() - started < timeout and child.poll() is None:
            for msg in consumer.consume(10000, 0.2):
                if msg.error() is None:
                    first = first or time.perf_counter()
                    folded.add(msg.key(), msg.value())
            now = time.perf_counter()
            if now - last_check > 0.5 or len(folded.rows) == len(want):
                last_check = now
                if folded.result() == want:
                    done = True
                    break
        seconds = time.perf_counter() - started
        cpu = sampler.stop()
        got = folded.result()
        result.update({
            "complete": done, "seconds": round(seconds, 2), "rec_per_s": round(result["input_records"] / seconds),
            "seconds_to_first_output": round(first - started, 2) if first else None,
            "rec_per_s_from_first_output": round(result["input_records"] / (started + seconds - first)) if first and started + seconds > first
            else None,
            "cpu_s_per_million": round(cpu / result["input_records"] * 1e6, 1),
            "peak_rss_mb": round(sampler.peak_rss / 2**20), "output_records": folded.records, "result_rows": len(got),
            "expected_rows": len(want), "rows_missing": len(want.keys() - got.keys()),
            "rows_extra": len(got.keys() - want.keys()),
            "rows_differing": sum(1 for k in want.keys() & got.keys() if want[k] != got[k])})
        if child.poll() is not None and not done:
            log.seek(0)
            result["error"] = log.read()[-3000:]
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
        consumer.close()
        log.close()
    return result


def versions(python: str) -> dict:
    code = ("import json, importlib.metadata as m\nout = {}\nfor p in ('quixstreams', 'pathway', 'confluent-kafka'):\n"
            "    try: out[p] = m.version(p)\n    except m.PackageNotFoundError: out[p] = None\nprint(json.dumps(out))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        sys.path.insert(0, str(ROOT / "bench"))
        from peer_jobs import CHILDREN

        system, job, bootstrap, out, _n, work = argv[1:7]
        CHILDREN[system](job, bootstrap, out, work)
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--systems", default="project,quix,pathway,loop")
    p.add_argument("--jobs", default="a,b,c,d,e")
    p.add_argument("--peer-python", default=sys.executable,
                   help="the interpreter with quixstreams and pathway (the [bench] extra)")
    p.add_argument("--timeout", type=float, default=900, help="seconds a job may take")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "peers.json"))
    args = p.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    from kafkasql_magic.local import LocalStack

    systems, jobs = args.systems.split(","), args.jobs.split(",")
    report = {"records": args.records, "cpu_count": os.cpu_count(), "load_average_start": list(os.getloadavg()),
              "peer_versions": versions(args.peer_python), "results": []}
    with LocalStack() as stack:
        bootstrap = stack.bootstrap_servers
        write_inputs(bootstrap, args.records)
        for job in jobs:
            for system in systems:
                if system == "loop" and job not in LOOP_JOBS:
                    continue
                python = sys.executable if system in ("project", "loop") else args.peer_python
                try:
                    res = run_job(python, system, job, bootstrap, args.records, args.timeout)
                except Exception as e:  # one job's failure is reported, the others still run
                    res = {"system": system, "job": job, "complete": False, "error": f"{type(e).__name__}: {e}"}
                report["results"].append(res)
                print(json.dumps({k: v for k, v in res.items() if k != "error"}), flush=True)
                if "error" in res:
                    print(res["error"][-1500:], file=sys.stderr, flush=True)
    report["load_average_end"] = list(os.getloadavg())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
