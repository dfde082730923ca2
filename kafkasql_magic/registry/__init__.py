"""Schema Registry: the embedded Confluent-compatible registry server.

`RegistryServer(bootstrap_servers)` serves the REST API of Confluent Schema Registry on a
loopback port and keeps its state in the compacted topic `_schemas` on that broker.
"""

from kafkasql_magic.registry.server import RegistryServer
from kafkasql_magic.registry.store import RegistryError

__all__ = ["RegistryError", "RegistryServer"]
