"""Widget benchmark: a push query through the live widget path (broker -> Spark -> LiveModel ->
LiveView's ipywidgets), as a notebook cell shows it.

    python bench/widget.py [--records 200000] [--rate 10000] [--seconds 20] [--out bench/results/widget.json]

Two measurements over the embedded broker and a local Spark session (start-up excluded):
  throughput   `--records` JSON records already in a topic, read by `SELECT ... EMIT CHANGES`
               from the earliest offset: rows/s into the widget model after its first
               micro-batch (a micro-batch admits at most the session's max records per
               trigger, 50,000) to the last record, and from the query's start (start-up included)
  latency      a producer thread writes `--rate` records/s for `--seconds`, each carrying the
               time it was produced; produce-to-model latency is measured for every record when
               its micro-batch reaches the model, produce-to-screen latency for the newest row of
               every table render of the widget (the view re-renders at most every 0.25 s)
The query runs with the session's default trigger interval, reported with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest import machine_facts, retried, spark_session, write_report  # noqa: E402  (bench/ is the script's folder)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def watch(query):
    """A LiveView over the query's model, as the magic shows it; returns the view."""
    from kafkasql_magic.live.view import LiveView

    return LiveView(query.model, on_stop=query.stop)


def wait_for(condition, timeout: float, query=None) -> bool:
    """Poll `condition` until it holds or `timeout` passes; a failed `query` raises its failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if query is not None and query.model.snapshot().state == "FAILED":
            raise RuntimeError(f"the query failed: {query.model.snapshot().message}")
        time.sleep(0.05)
    return condition()


def throughput(session, bootstrap: str, n: int) -> dict:
    from kafkasql_magic.local import produce

    suffix = uuid.uuid4().hex[:8]  # fresh names for a retried attempt
    topic = f"bench-widget-rows-{suffix}"
    produce(bootstrap, topic, ({"value": json.dumps({"id": i, "t": 0}).encode()} for i in range(n)),
            create_partitions=2)
    session.sql(f"CREATE STREAM widget_rows_{suffix} (id BIGINT, t BIGINT) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    firsts: list[tuple[float, int]] = []  # (when, rows) of the first micro-batch in the model
    started = time.perf_counter()
    query = session.sql(f"SELECT id, t FROM widget_rows_{suffix} EMIT CHANGES;")
    model = query.model
    view = watch(query)
    model.subscribe(lambda snap: firsts.append((time.perf_counter(), snap.rows_total))
                    if snap.rows_total and not firsts else None)
    try:
        assert wait_for(lambda: model.snapshot().rows_total >= n, 3600, query), model.snapshot().rows_total
        done = time.perf_counter()
    finally:
        query.stop()
        view.close()
    first_at, first_rows = firsts[0]
    return {"records": n, "first_batch_rows": first_rows,
            "rows_per_s_after_first_batch": round((n - first_rows) / (done - first_at)) if n > first_rows else None,
            "rows_per_s_from_query_start": round(n / (done - started))}


def latency(session, bootstrap: str, rate: int, seconds: float) -> dict:
    from confluent_kafka import Producer

    from kafkasql_magic.kafka.admin import create_topic

    suffix = uuid.uuid4().hex[:8]
    topic = f"bench-widget-latency-{suffix}"
    create_topic(bootstrap, topic, 2)
    session.sql(f"CREATE STREAM widget_lat_{suffix} (id BIGINT, t BIGINT) "
                f"WITH (kafka_topic='{topic}', value_format='JSON');")
    query = session.sql(f"SELECT id, t FROM widget_lat_{suffix} EMIT CHANGES;")
    model = query.model
    to_model: list[float] = []
    to_screen: list[float] = []
    on_batch = model.on_batch

    def arrived(batch_id, rows, **kw):  # every record, when its micro-batch reaches the model
        rows = list(rows)
        now = time.time()
        to_model.extend(now - t / 1e6 for _, t in rows)
        on_batch(batch_id, rows, **kw)

    model.on_batch = arrived
    view = watch(query)
    render = view._render

    def rendered(snap):  # the newest row on screen, when the table is set
        render(snap)
        if snap.rows:
            to_screen.append(time.time() - snap.rows[-1][1] / 1e6)

    view._render = rendered
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    produced = 0
    try:
        time.sleep(5)  # the query's first (empty) micro-batches
        step = 0.01
        per_step = max(1, int(rate * step))
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            due = t0 + (produced // per_step) * step
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            for _ in range(per_step):
                producer.produce(topic, json.dumps({"id": produced, "t": int(time.time() * 1e6)}).encode(),
                                 partition=produced % 2)
                produced += 1
            producer.poll(0)
        produce_seconds = time.perf_counter() - t0
        producer.flush(30)
        caught_up = wait_for(lambda: model.snapshot().rows_total >= produced, 300, query)
    finally:
        query.stop()
        view.close()
    return {"target_rate": rate, "produced": produced, "produced_per_s": round(produced / produce_seconds),
            "seconds": seconds, "caught_up": caught_up, "rows_in_model": model.snapshot().rows_total,
            "renders": len(to_screen),
            "produce_to_model_ms": {"p50": ms(percentile(to_model, 0.5)), "p99": ms(percentile(to_model, 0.99)),
                                    "max": ms(max(to_model, default=None))},
            "produce_to_screen_ms": {"p50": ms(percentile(to_screen, 0.5)), "p99": ms(percentile(to_screen, 0.99)),
                                     "max": ms(max(to_screen, default=None))}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rate", type=int, default=10_000, help="records/s produced in the latency run")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "widget.json"))
    args = ap.parse_args(argv)

    import kafkasql_magic as ks
    from kafkasql_magic.local import LocalStack

    cores = os.cpu_count() or 1
    with LocalStack() as stack:
        spark = spark_session(cores)
        session = ks.connect(bootstrap_servers=stack.bootstrap_servers, spark=spark, timeout=600)
        session.sql("SET 'auto.offset.reset'='earliest';")
        load_before = os.getloadavg()[0]
        rows = retried(lambda: throughput(session, stack.bootstrap_servers, args.records))
        lat = retried(lambda: latency(session, stack.bootstrap_servers, args.rate, args.seconds))
        load_after = os.getloadavg()[0]
        trigger = session.trigger_interval
        session.stop()
        spark.stop()
    results = {"cores": cores, "trigger_interval": trigger, "throughput": rows, "latency": lat,
               "load_average_1min": [round(load_before, 2), round(load_after, 2)],
               "machine": machine_facts(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps({k: results[k] for k in ("cores", "trigger_interval", "throughput", "latency")}, indent=2))
    out = Path(args.out)
    write_report(out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
