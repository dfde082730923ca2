"""The jobs of bench/peers.py as each system runs them, in the job's own process: print READY
when about to run, then run until killed. See bench/peers.py for the jobs and how they are measured."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
