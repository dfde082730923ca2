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
the tree (sampled every 0.2 s: bench/proctree.py). quixstreams and Pathway are not runtime dependencies; they run in
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
        line = child.stdout.readline()  # READY once the job is about to run
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


# ---------------------------------------------------------------- the jobs, per system (child side)

def ready() -> None:
    print("READY", flush=True)


def child_project(job: str, bootstrap: str, out: str, work: str) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import kafkasql_magic as ks
    from ingest import spark_session

    spark = spark_session(os.cpu_count() or 1)
    session = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=600, state_dir=str(Path(work) / "state"))
    session.sql("SET 'auto.offset.reset'='earliest';")
    session.sql("CREATE STREAM orders (customer STRING KEY, orderid STRING, item STRING, qty INT, price DOUBLE, "
                "ts BIGINT) WITH (kafka_topic='orders', value_format='JSON');")
    session.sql("CREATE TABLE customers (id STRING PRIMARY KEY, name STRING, region STRING) "
                "WITH (kafka_topic='customers', value_format='JSON');")
    session.sql("CREATE TABLE orders_t (orderid STRING PRIMARY KEY, customer STRING, qty INT, price DOUBLE, ts BIGINT) "
                "WITH (kafka_topic='orders_cl', value_format='JSON');")
    session.sql("CREATE TABLE payments_t (orderid STRING PRIMARY KEY, amount DOUBLE, method STRING) "
                "WITH (kafka_topic='payments', value_format='JSON');")
    sink = f"WITH (KAFKA_TOPIC='{out}', VALUE_FORMAT='JSON')"
    text = {
        "a": f"CREATE STREAM a_out {sink} AS SELECT customer, orderid, qty * price AS total FROM orders WHERE qty > 1;",
        "b": f"CREATE TABLE b_out {sink} AS SELECT customer, AS_VALUE(customer) AS cust, WINDOWSTART AS ws, "
             "COUNT(*) AS n, SUM(qty) AS q FROM orders WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY customer EMIT CHANGES;",
        "c": f"CREATE STREAM c_out {sink} AS SELECT o.customer AS customer, o.orderid AS orderid, c.name AS name, "
             "o.qty AS qty FROM orders o JOIN customers c ON o.customer = c.id;",
        "d": f"CREATE TABLE d_out {sink} AS SELECT customer, AS_VALUE(customer) AS cust, COUNT(*) AS n, SUM(qty) AS q "
             "FROM orders_t GROUP BY customer;",
        "e": f"CREATE TABLE e_out {sink} AS SELECT o.orderid AS orderid, AS_VALUE(o.orderid) AS oid, "
             "o.customer AS customer, o.qty AS qty, p.amount AS amount FROM orders_t o JOIN payments_t p "
             "ON o.orderid = p.orderid;",
    }[job]
    ready()
    session.sql(text)
    while True:
        time.sleep(3600)


def child_loop(job: str, bootstrap: str, out: str, work: str) -> None:
    from confluent_kafka import Consumer, Producer

    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"loop-{out}", "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    partitions = consumer.list_topics("orders", timeout=30).topics["orders"].partitions
    consumer.assign([TopicPartition("orders", p, OFFSET_BEGINNING) for p in partitions])
    windows: dict = {}
    ready()
    while True:
        batch = consumer.consume(10000, 0.5)
        changed = set()
        for msg in batch:
            if msg.error() is not None:
                continue
            o = json.loads(msg.value())
            if job == "a":
                if o["qty"] > 1:
                    producer.produce(out, json.dumps({"orderid": o["orderid"], "total": o["qty"] * o["price"]}).encode(),
                                     msg.key())
                continue
            key = (o["customer"], msg.timestamp()[1] // 10_000 * 10_000)
            c, q = windows.get(key, (0, 0))
            windows[key] = (c + 1, q + o["qty"])
            changed.add(key)
        for cust, ws in changed:  # every changed window once per polled batch
            c, q = windows[(cust, ws)]
            producer.produce(out, json.dumps({"cust": cust, "ws": ws, "n": c, "q": q}).encode(), cust.encode())
        producer.poll(0)


def child_quix(job: str, bootstrap: str, out: str, work: str) -> None:
    from quixstreams import Application
    from quixstreams.dataframe.windows import Count, Sum
    from quixstreams.models.topics.manager import TopicManager

    derive = TopicManager.derive_topic_config.__func__

    def with_retention(cls, topics):  # the embedded broker does not report these, quixstreams expects them
        for t in topics:
            t.broker_config.extra_config.setdefault("retention.ms", "604800000")
            t.broker_config.extra_config.setdefault("retention.bytes", "-1")
        return derive(cls, topics)

    TopicManager.derive_topic_config = classmethod(with_retention)

    app = Application(broker_address=bootstrap, consumer_group=f"quix-{out}", auto_offset_reset="earliest",
                      state_dir=str(Path(work) / "state"), loglevel="WARNING")
    topic = lambda name: app.topic(name, key_deserializer="str", value_deserializer="json")  # noqa: E731
    sink = app.topic(out, key_serializer="str", value_serializer="json")
    if job == "a":
        sdf = app.dataframe(topic("orders"))
        sdf = sdf[sdf["qty"] > 1].apply(lambda v: {"orderid": v["orderid"], "total": v["qty"] * v["price"]})
    elif job == "b":
        sdf = app.dataframe(topic("orders")).tumbling_window(10_000).agg(n=Count(), q=Sum("qty")).current()
        sdf = sdf.apply(lambda v, key, ts, headers: {"cust": key, "ws": v["start"], "n": v["n"], "q": v["q"]},
                        metadata=True)
    elif job == "c":
        customers = app.dataframe(topic("customers"))
        sdf = app.dataframe(topic("orders")).join_asof(customers, how="inner")
        sdf = sdf.apply(lambda v: {"orderid": v["orderid"], "name": v["name"], "qty": v["qty"]})
    elif job == "d":  # no table aggregation: each order's previous row is retracted by hand
        def changes(v, state):
            before = state.get("row")
            state.set("row", [v["customer"], v["qty"]])
            rows = [{"cust": v["customer"], "dn": 1, "dq": v["qty"]}]
            return rows + ([{"cust": before[0], "dn": -1, "dq": -before[1]}] if before else [])

        def total(v, state):
            n, q = state.get("t", [0, 0])
            state.set("t", [n + v["dn"], q + v["dq"]])
            return {"cust": v["cust"], "n": n + v["dn"], "q": q + v["dq"]}

        sdf = app.dataframe(topic("orders_cl")).apply(changes, stateful=True, expand=True)
        sdf = sdf.group_by("cust").apply(total, stateful=True)
    else:  # no table-table join: both changelogs in one keyed state, joined by hand
        def join(v, state):
            side = "p" if "amount" in v else "o"
            state.set(side, v)
            o, p = state.get("o"), state.get("p")
            if o is None or p is None:
                return None
            return {"oid": o["orderid"], "customer": o["customer"], "qty": o["qty"], "amount": p["amount"]}

        sdf = app.dataframe(topic("orders_cl")).concat(app.dataframe(topic("payments")))
        sdf = sdf.apply(join, stateful=True).filter(lambda v: v is not None)
    sdf.to_topic(sink)
    ready()
    app.run()


def child_pathway(job: str, bootstrap: str, out: str, work: str) -> None:
    import pathway as pw

    settings = {"bootstrap.servers": bootstrap, "group.id": f"pw-{out}", "auto.offset.reset": "earliest",
                "session.timeout.ms": "6000"}

    class Order(pw.Schema):
        orderid: str
        customer: str
        item: str
        qty: int
        price: float
        ts: int

    class Customer(pw.Schema):
        cid: str
        name: str
        region: str

    class OrderRow(pw.Schema):
        orderid: str
        customer: str
        qty: int
        price: float
        ts: int

    class Payment(pw.Schema):
        orderid: str
        amount: float
        method: str

    read = lambda topic, schema: pw.io.kafka.read(settings, topic=topic, format="json", schema=schema,  # noqa: E731
                                                  autocommit_duration_ms=200)
    # a changelog as a table: the latest row per order id (its ts grows with every update)
    table = lambda topic: read(topic, OrderRow).deduplicate(  # noqa: E731
        value=pw.this.ts, instance=pw.this.orderid, acceptor=lambda new, old: new > old)
    if job == "a":
        orders = read("orders", Order)
        result = orders.filter(pw.this.qty > 1).select(pw.this.orderid, total=pw.this.qty * pw.this.price)
    elif job == "b":
        orders = read("orders", Order)
        result = orders.windowby(pw.this.ts, window=pw.temporal.tumbling(duration=10_000),
                                 instance=pw.this.customer).reduce(
            cust=pw.this._pw_instance, ws=pw.this._pw_window_start, n=pw.reducers.count(),
            q=pw.reducers.sum(pw.this.qty))
    elif job == "c":
        orders, customers = read("orders", Order), read("customers", Customer)
        result = orders.join(customers, pw.left.customer == pw.right.cid).select(
            pw.left.orderid, pw.right.name, pw.left.qty)
    elif job == "d":
        rows = table("orders_cl")
        result = rows.groupby(pw.this.customer).reduce(cust=pw.this.customer, n=pw.reducers.count(),
                                                       q=pw.reducers.sum(pw.this.qty))
    else:
        rows, payments = table("orders_cl"), read("payments", Payment)
        result = rows.join(payments, pw.left.orderid == pw.right.orderid).select(
            oid=pw.left.orderid, customer=pw.left.customer, qty=pw.left.qty, amount=pw.right.amount)
    pw.io.kafka.write(result, settings, topic_name=out, format="json")
    ready()
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)


CHILDREN = {"project": child_project, "loop": child_loop, "quix": child_quix, "pathway": child_pathway}


def versions(python: str) -> dict:
    code = ("import json, importlib.metadata as m\nout = {}\nfor p in ('quixstreams', 'pathway', 'confluent-kafka'):\n"
            "    try: out[p] = m.version(p)\n    except m.PackageNotFoundError: out[p] = None\nprint(json.dumps(out))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
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
