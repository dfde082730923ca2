"""`make demo`: a ksqlDB-style push query over a real Kafka broker, through Spark.

Starts the embedded broker, writes orders with keys, headers and timestamps into two
partitions, then reads them back with SQL: typed key, value, header and pseudocolumns.
"""

from __future__ import annotations

import json
import time

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.local.stack import LocalStack

ORDERS = [
    (1, {"item": "apple", "qty": 3, "price": 0.5}, "web"),
    (2, {"item": "pear", "qty": 1, "price": 0.75}, "mobile"),
    (1, {"item": "plum", "qty": 12, "price": 0.2}, "web"),
    (3, {"item": "fig", "qty": 5, "price": 1.1}, "store"),
    (2, {"item": "kiwi", "qty": 7, "price": 0.3}, "mobile"),
    (3, {"item": "lime", "qty": 2, "price": 0.4}, "web"),
]


def main() -> None:
    with LocalStack() as stack:
        print(f"Embedded Kafka broker at {stack.bootstrap_servers}")
        now = int(time.time() * 1000)
        produce(stack.bootstrap_servers, "orders", [
            {"key": customer.to_bytes(4, "big"), "value": json.dumps(order).encode(),
             "headers": [("channel", channel.encode()), ("trace", f"t-{i}".encode())],
             "partition": customer % 2, "timestamp": now + i}
            for i, (customer, order, channel) in enumerate(ORDERS)
        ], create_partitions=2)

        session = ks.connect(bootstrap_servers=stack.bootstrap_servers)
        print("Starting Spark ...")
        session.sql("""
            SET 'auto.offset.reset'='earliest';
            CREATE STREAM orders (
                customer INT KEY,
                item STRING, qty INT, price DOUBLE,
                channel BYTES HEADER('channel')
            ) WITH (kafka_topic='orders', value_format='JSON');
        """)
        query = """
            SELECT customer, item, qty * price AS total, FROM_BYTES(channel, 'utf8') AS channel,
                   ROWPARTITION AS p, ROWOFFSET AS o
            FROM orders WHERE qty > 1 EMIT CHANGES LIMIT 5;"""
        print(f"\nksql> {query.strip()}\n")
        rows = session.sql(query, timeout=120)
        print(rows.sort_values(["P", "O"]).to_string(index=False))
        print("\nksql> DESCRIBE orders;\n")
        print(session.sql("DESCRIBE orders;").to_string(index=False))
        session.stop()


if __name__ == "__main__":
    main()
