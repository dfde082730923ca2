"""The embedded stack for demos, tutorials and tests: a Kafka broker (Tansu) on loopback.

`python -m kafkasql_magic.local up|down|status` runs it detached; `start_default()` runs it
inside the current process (what `%kstream_local start` uses).
"""

from kafkasql_magic.local.broker import Broker
from kafkasql_magic.kafka.producer import create_topic, produce
from kafkasql_magic.local.stack import LocalStack, default, endpoints, start_default, stop_default

__all__ = ["Broker", "LocalStack", "create_topic", "default", "endpoints", "produce", "start_default",
           "stop_default"]
