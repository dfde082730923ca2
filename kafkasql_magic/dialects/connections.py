"""Materialize's secrets and connections as plain data: what CREATE SECRET / CREATE CONNECTION
declare, and the client properties a source over a connection reads with.

A Kafka connection becomes librdkafka properties (bootstrap.servers, security.protocol, sasl.*,
ssl.*.pem), a registry connection the Schema Registry client's (url, basic.auth.user.info, and
the PEM texts of its TLS options). Secret values are looked up only when properties are built;
nothing here shows one: SHOW SECRETS lists names, every repr masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import redact
from ..clientconf import Address
from ..errors import StatementError
from ..sql.ast_materialize import ConnectionOption, CreateConnection, CreateSecret

KAFKA, REGISTRY = "KAFKA", "CONFLUENT SCHEMA REGISTRY"

#: Kafka connection option -> librdkafka property
KAFKA_PROPERTIES = {
    "BROKER": "bootstrap.servers",
    "BROKERS": "bootstrap.servers",
    "SECURITY PROTOCOL": "security.protocol",
    "SASL MECHANISMS": "sasl.mechanisms",
    "SASL USERNAME": "sasl.username",
    "SASL PASSWORD": "sasl.password",
    "SSL CERTIFICATE AUTHORITY": "ssl.ca.pem",
    "SSL CERTIFICATE": "ssl.certificate.pem",
    "SSL KEY": "ssl.key.pem",
}

#: Schema Registry connection option -> client property (PEM texts: the client takes files,
#: so whoever builds the client writes these out)
REGISTRY_PROPERTIES = {
    "URL": "url",
    "USERNAME": "basic.auth.username",
    "PASSWORD": "basic.auth.password",
    "SSL CERTIFICATE AUTHORITY": "ssl.ca.pem",
    "SSL CERTIFICATE": "ssl.certificate.pem",
    "SSL KEY": "ssl.key.pem",
}

OPTIONS = {KAFKA: KAFKA_PROPERTIES, REGISTRY: REGISTRY_PROPERTIES}
#: options whose value must come from a secret, as in Materialize
SECRET_ONLY = frozenset({"SASL PASSWORD", "SSL KEY", "PASSWORD"})
#: client properties never shown
SENSITIVE = frozenset({"sasl.password", "ssl.key.pem", "basic.auth.password", "basic.auth.user.info"})
#: SHOW CONNECTIONS' type column
TYPE_NAMES = {KAFKA: "kafka", REGISTRY: "confluent-schema-registry"}


class SecretMissing(StatementError):
    """A connection restored from the command topic names a secret this session lacks: secret
    values are never written there, so it waits until the secret is created again."""

    def __init__(self, connection: str, secrets: tuple[str, ...]):
        self.connection, self.secrets = connection, secrets
        recreate = "; ".join(f"CREATE SECRET {s} AS '...'" for s in secrets)
        names = ", ".join(f"'{s}'" for s in secrets)
        super().__init__(f"connection '{connection}' needs secret {names}, which this session does not have "
                         f"(secret values are never written to the command topic): re-create it with {recreate}")


class ClientProperties(dict):
    """Client properties whose repr masks the sensitive ones."""

    def __repr__(self):
        return repr({k: "********" if k in SENSITIVE else v for k, v in self.items()})

    __str__ = __repr__


@dataclass(frozen=True)
class Connection:
    """A declared connection: options as written (secret options name their secret)."""

    name: str
    kind: str
    options: tuple[ConnectionOption, ...]

    def option(self, name: str) -> ConnectionOption | None:
        return next((o for o in self.options if o.name == name), None)


@dataclass(frozen=True)
class Endpoint:
    """What a source (or sink) over a connection reaches: `address` (bootstrap servers or the
    registry URL, a `clientconf.Address` carrying the connection's client properties) and those
    properties (secrets resolved, the address left out). Only clients made for that Address get
    them: a connection changes nothing for other clients of the same address."""

    name: str
    kind: str
    address: str
    properties: ClientProperties


@dataclass
class Connections:
    """The secrets and connections of a session, by name (case as the parser gave it)."""

    _secrets: dict[str, str] = field(default_factory=dict, repr=False)
    connections: dict[str, Connection] = field(default_factory=dict)
    #: connections restored from the command topic that wait for secrets: name -> their names
    waiting: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __repr__(self):
        return f"Connections(secrets={sorted(self._secrets)}, connections={sorted(self.connections)})"

    # ------------------------------------------------------------ statements
    def create_secret(self, stmt: CreateSecret) -> None:
        if self._exists(stmt.name, stmt.if_not_exists):
            return
        redact.remember(stmt.value)  # masked in every text from now on
        self._secrets[stmt.name] = stmt.value

    def create_connection(self, stmt: CreateConnection) -> None:
        if self._exists(stmt.name, stmt.if_not_exists):
            return
        allowed = OPTIONS[stmt.kind]
        for option in stmt.options:
            if option.name not in allowed:
                raise StatementError(f"{stmt.kind} connections have no option {option.name} "
                                     f"(use {', '.join(allowed)})")
            if option.name in SECRET_ONLY and option.secret is None:
                raise StatementError(f"{option.name} must be a SECRET (CREATE SECRET name AS '...', "
                                     f"then {option.name} = SECRET name)")
            if option.secret is not None and option.secret not in self._secrets:
                raise StatementError(f"unknown catalog item '{option.secret}'")
        names = {o.name for o in stmt.options}
        if stmt.kind == KAFKA and not names & {"BROKER", "BROKERS"}:
            raise StatementError("must set one of BROKER, BROKERS, or AWS PRIVATELINK")
        if stmt.kind == KAFKA and names & {"SASL USERNAME", "SASL PASSWORD"} and "SASL MECHANISMS" not in names:
            raise StatementError("SASL USERNAME and SASL PASSWORD need SASL MECHANISMS")
        if stmt.kind == REGISTRY and "URL" not in names:
            raise StatementError("CONFLUENT SCHEMA REGISTRY connections need a URL")
        self.connections[stmt.name] = Connection(stmt.name, stmt.kind, stmt.options)

    def drop(self, kind: str, name: str, if_exists: bool = False) -> None:
        """DROP SECRET | CONNECTION [IF EXISTS] name; a secret in use stays."""
        table = self._secrets if kind == "SECRET" else self.connections
        if name not in table:
            if if_exists:
                return
            raise StatementError(f"unknown catalog item '{name}'")
        if kind == "SECRET":
            users = sorted(c.name for c in self.connections.values() if any(o.secret == name for o in c.options))
            if users:
                raise StatementError(f"cannot drop secret '{name}': still depended upon by "
                                     + ", ".join(f"connection '{u}'" for u in users))
        del table[name]

    def missing_secrets(self, stmt: CreateConnection) -> tuple[str, ...]:
        """The secrets `stmt` names that this session does not have, in order."""
        return tuple(dict.fromkeys(o.secret for o in stmt.options
                                   if o.secret is not None and o.secret not in self._secrets))

    def show_secrets(self) -> list[dict]:
        """SHOW SECRETS: names only."""
        return [{"name": name, "comment": ""} for name in sorted(self._secrets)]

    def show_connections(self) -> list[dict]:
        return [{"name": c.name, "type": TYPE_NAMES[c.kind], "comment": ""}
                for c in sorted(self.connections.values(), key=lambda c: c.name)]

    # ------------------------------------------------------------ use
    def endpoint(self, name: str, kind: str | None = None) -> Endpoint:
        """Connection `name` (of `kind`, KAFKA or CONFLUENT SCHEMA REGISTRY, when given) as an
        address and client properties; an unknown name or the wrong kind is a StatementError."""
        connection = self._connection(name, kind or self._connection(name, None).kind)
        if connection.kind == KAFKA:
            props = self.kafka_properties(name)
            address = props.pop("bootstrap.servers")
        else:
            props = self.registry_properties(name)
            address = props.pop("url").rstrip("/")
        return Endpoint(connection.name, connection.kind, Address(address, connection.name, props), props)

    def kafka_properties(self, name: str) -> ClientProperties:
        """librdkafka properties of Kafka connection `name` (secrets resolved). Materialize's
        default protocol: SASL_SSL with SASL options, SSL otherwise."""
        connection = self._connection(name, KAFKA)
        props = self._properties(connection)
        props["security.protocol"] = props.get("security.protocol") or (
            "SASL_SSL" if any(k.startswith("sasl.") for k in props) else "SSL")
        props["security.protocol"] = props["security.protocol"].upper()
        return props

    def registry_properties(self, name: str) -> ClientProperties:
        """Schema Registry client properties of registry connection `name` (secrets resolved):
        url, basic.auth.user.info, and ssl.*.pem texts."""
        props = self._properties(self._connection(name, REGISTRY))
        user, password = props.pop("basic.auth.username", None), props.pop("basic.auth.password", None)
        if user is not None or password is not None:
            props["basic.auth.user.info"] = f"{user or ''}:{password or ''}"
        return props

    # ------------------------------------------------------------ helpers
    def _exists(self, name: str, if_not_exists: bool) -> bool:
        if name in self._secrets or name in self.connections:
            if if_not_exists:
                return True
            raise StatementError(f"catalog item '{name}' already exists")
        return False

    def _connection(self, name: str, kind: str | None) -> Connection:
        if name in self.waiting:
            raise SecretMissing(name, self.waiting[name])
        connection = self.connections.get(name)
        if connection is None:
            raise StatementError(f"unknown catalog item '{name}'")
        if kind is not None and connection.kind != kind:
            raise StatementError(f"{name} is not a {kind} CONNECTION")
        return connection

    def _properties(self, connection: Connection) -> ClientProperties:
        names = OPTIONS[connection.kind]
        props = ClientProperties()
        for option in connection.options:
            props[names[option.name]] = self._secrets[option.secret] if option.secret is not None else option.value
        return props
