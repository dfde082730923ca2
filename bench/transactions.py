"""Does the broker support Kafka transactions? What exactly-once sinks would rely on, measured.

    python bench/transactions.py [--bootstrap-servers HOST:PORT] [--out bench/results/transactions.json]

Without --bootstrap-servers it starts the embedded broker. With confluent-kafka it runs the
calls of a transactional sink (init_transactions, begin, produce, send_offsets_to_transaction,
commit; then a second transaction aborted) and reads the topic back with `read_committed` and
`read_uncommitted` consumers: a broker that honours transactions hides the aborted record from
the read_committed one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def read_back(bootstrap: str, topic: str, isolation: str) -> list[str]:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import KafkaError as CKError

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{isolation}",
                         "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            for msg in consumer.consume(100, 0.5):
                if msg.error() is None:
                    got.append(msg.value().decode())
                elif msg.error().code() == CKError._PARTITION_EOF:
                    deadline = 0
    finally:
        consumer.close()
    return got


def measure(bootstrap: str) -> dict:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkasql_magic.kafka.admin import create_topic

    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{topic}"})
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-txn"}).consumer_group_metadata()
    calls = {
        "init_transactions": lambda: producer.init_transactions(15),
        "begin_transaction": producer.begin_transaction,
        "produce": lambda: (producer.produce(topic, b"committed"), producer.flush(10)),
        "send_offsets_to_transaction": lambda: producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 1)], group, 15),
        "commit_transaction": lambda: producer.commit_transaction(15),
        "abort_transaction": lambda: (producer.begin_transaction(), producer.produce(topic, b"aborted"),
                                      producer.flush(10), producer.abort_transaction(15)),
    }
    results = {}
    for name, call in calls.items():
        try:
            call()
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - the answer is what failed, and how
            results[name] = f"failed: {exc}"
    committed, uncommitted = read_back(bootstrap, topic, "read_committed"), read_back(bootstrap, topic, "read_uncommitted")
    return {"calls": results, "read_committed": committed, "read_uncommitted": uncommitted,
            "aborted_hidden_from_read_committed": "aborted" not in committed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "transactions.json"))
    args = p.parse_args(argv)
    if args.bootstrap_servers:
        result = {"broker": args.bootstrap_servers, **measure(args.bootstrap_servers)}
    else:
        from kafkasql_magic.local.stack import LocalStack

        with LocalStack() as stack:
            result = {"broker": "tansu 0.6.0 (embedded, memory storage)", **measure(stack.bootstrap_servers)}
    result["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = json.dumps(result, indent=1)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
