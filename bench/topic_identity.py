"""What the reader's topic-id check costs: one DescribeTopics per range read, in the worker.

    python bench/topic_identity.py [--records 1000,10000] [--repeat 30] [--out bench/results/topic-identity.json]

On the embedded broker, in this process (as a Spark Python worker runs a range: `read_range`,
then `identity.verified`'s look-up), it times:

  lookup_warm_ms   `identity.lookup` with the process's cached admin client (a reused worker)
  lookup_cold_ms   the same with a new admin client each time (a worker's first range)
  read_<n>_ms      reading one range of n records without the check, and with it (`checked`);
                   `lookup_after_read`: the check alone, right after a read of the range

A streaming micro-batch reads one range per partition (more when a partition's range is
split at maxRecordsPerPartition), so the check costs that many look-ups per micro-batch; the
report gives the median of `--repeat` runs of each (the reads with and without the check in
turn) and the check's share of an unchecked range read (`lookup_share`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import machine_facts  # noqa: E402

from kafkasql_magic.kafka import admin, identity  # noqa: E402
from kafkasql_magic.kafka.arrow_batch import KafkaRange, read_range  # noqa: E402
from kafkasql_magic.kafka.producer import produce  # noqa: E402
from kafkasql_magic.local.broker import Broker  # noqa: E402


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def alternating_ms(first, second, repeat: int) -> tuple[float, float]:
    """Medians of `first` and `second` run in turn (a shared machine's load hits both alike)."""
    times: tuple[list, list] = ([], [])
    for _ in range(repeat):
        for fn, out in zip((first, second), times):
            started = time.perf_counter()
            fn()
            out.append((time.perf_counter() - started) * 1000)
    return tuple(round(statistics.median(t), 3) for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out")
    args = parser.parse_args()
    sizes = [int(n) for n in args.records.split(",")]

    broker = Broker()
    broker.start()
    try:
        bs = broker.bootstrap_servers
        topic = "identity-bench"
        admin.create_topic(bs, topic, 1)
        produce(bs, topic, ({"key": f"k{i}", "value": f'{{"v": {i}, "s": "some text"}}'} for i in range(max(sizes))))
        topic_id = identity.describe(bs, topic).topic_id

        def cold():
            admin.drop_clients(bs)
            identity.lookup(bs, topic)

        result = {"machine": machine_facts(), "load_average": os.getloadavg(), "repeat": args.repeat,
                  "topic_id_known": topic_id is not None,
                  "lookup_warm_ms": median_ms(lambda: identity.lookup(bs, topic), args.repeat),
                  "lookup_cold_ms": median_ms(cold, args.repeat)}
        for n in sizes:
            def read(checked: bool, n=n):
                rng = KafkaRange(topic, 0, 0, n, bs)
                rng.topic_id = topic_id if checked else None
                rows = sum(b.num_rows for b in identity.verified(rng, read_range(rng, identity.watch(rng))))
                assert rows == n, (rows, n)

            read(True)  # warm the admin client, as a reused worker has it
            plain, checked = alternating_ms(lambda: read(False), lambda: read(True), args.repeat)
            after = []
            for _ in range(args.repeat):  # the look-up alone, as `verified` makes it after a read
                rng = KafkaRange(topic, 0, 0, n, bs)
                rng.topic_id = topic_id
                for _batch in read_range(rng):
                    pass
                started = time.perf_counter()
                list(identity.verified(rng, iter(())))
                after.append((time.perf_counter() - started) * 1000)
            result[f"read_{n}_ms"] = {"unchecked": plain, "checked": checked,
                                      "lookup_after_read": round(statistics.median(after), 3),
                                      "lookup_share": round(statistics.median(after) / plain, 4)}
    finally:
        broker.stop()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
