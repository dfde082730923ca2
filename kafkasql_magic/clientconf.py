"""Client properties for every client the project makes: librdkafka (admin, consumers on the
executors, producers) and the Schema Registry client.

They come from `connect(..., config={...})`, a Kafka-style properties file
(`connect(..., config="client.properties")`), `%config KStreamMagics.kafka_config` and `SET`.
Registry properties are the Schema Registry client's own names (`basic.auth.user.info`,
`bearer.auth.token`, ...) or those names prefixed with `schema.registry.` or ksqlDB's
`ksql.schema.registry.`; every other property is a librdkafka one.

The session's settings are kept per bootstrap servers (librdkafka clients) and per registry URL
(registry clients) in this process: every client built for them gets them. A Materialize
connection's properties are not kept here: they travel with the address a source or sink over
the connection reads (`Address`), so they reach only the clients made for that source or sink.
Executors get the librdkafka ones through the source's options (secret ones under option names
Spark redacts in plans).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from typing import Mapping

from . import redact
from .errors import StatementError

#: Prefixes marking a registry client property; stripped before the client sees it.
REGISTRY_PREFIXES = ("ksql.schema.registry.", "schema.registry.")
#: The registry client's own property names.
REGISTRY_PROPERTIES = re.compile(r"^(basic\.auth\.|bearer\.auth\.)")
#: ksqlDB statement properties SET accepts that are not client properties.
SESSION_PROPERTIES = re.compile(r"^(auto\.offset\.reset$|ksql\.|kafkasql\.|processing\.)")
#: Property names SET applies to librdkafka clients (the rest of SET stays a ksqlDB property).
CLIENT_PROPERTIES = re.compile(
    r"^(security\.protocol|sasl\.|ssl\.|enable\.ssl|client\.(id|rack)|socket\.|reconnect\.|"
    r"connections\.|metadata\.|broker\.|api\.version|request\.timeout|retry\.backoff|"
    r"message\.max\.bytes|topic\.metadata|oauthbearer\.|https?\.)")
#: Where a registry URL's own setting lives in a properties file.
URL_PROPERTIES = ("schema.registry.url", "ksql.schema.registry.url")

_lock = threading.Lock()
_kafka: dict[str, dict[str, str]] = {}
_registry: dict[str, dict[str, str]] = {}


class Address(str):
    """A broker address or registry URL as a connection reaches it: the text is the address,
    `properties` the connection's client properties (secrets resolved, the address left out).
    A client made for an Address gets its properties and only those, never the session's for
    the same text: two connections to one address (two identities, two clusters behind one
    name) stay apart, and a connection changes no client but those of what names it."""

    def __new__(cls, address: str, connection: str, properties: Mapping[str, str]):
        self = super().__new__(cls, address)
        self.connection = connection
        self.properties = dict(properties)
        return self

    def __getnewargs__(self):  # pickled with its properties (a decoding UDF carries its registry's)
        return str(self), self.connection, self.properties

    def __repr__(self):
        return f"{str.__repr__(self)} (connection {self.connection})"


def load_properties(path: str) -> dict[str, str]:
    """A Java-style properties file: `key=value` or `key: value`, `#`/`!` comments, `\\`
    continuation lines."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise StatementError(f"Cannot read the client properties file {path}: {exc.strerror}") from None
    out: dict[str, str] = {}
    pending = ""
    for number, line in enumerate(lines, 1):
        line = pending + line.lstrip()
        pending = ""
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        if not line or line[0] in "#!":
            continue
        match = re.match(r"^((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            if re.match(r"^\S+$", line):  # a key with no value
                out[line] = ""
                continue
            raise StatementError(f"Client properties file {path}, line {number}: expected key=value")
        out[match.group(1).replace("\\", "")] = match.group(2)
    return out


def from_argument(config: Mapping[str, object] | str | os.PathLike | None) -> dict[str, str]:
    """`config` as given to connect(): a mapping, or the path of a properties file."""
    if config is None:
        return {}
    if isinstance(config, (str, os.PathLike)):
        return load_properties(os.fspath(config))
    return {str(k): "" if v is None else str(v) if not isinstance(v, bool) else str(v).lower()
            for k, v in dict(config).items()}


def registry_name(name: str) -> str | None:
    """The registry client's name for property `name`, or None when it is not a registry one."""
    for prefix in REGISTRY_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name if REGISTRY_PROPERTIES.match(name) else None


def is_client_property(name: str) -> bool:
    """True when SET `name` configures clients (librdkafka or registry) rather than queries."""
    if SESSION_PROPERTIES.match(name):
        return False
    return registry_name(name) is not None or bool(CLIENT_PROPERTIES.match(name)) or name.startswith("kafka.")


def split(properties: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(librdkafka properties, registry client properties); URLs of the registry are dropped."""
    kafka, registry = {}, {}
    for name, value in properties.items():
        if name in URL_PROPERTIES:
            continue
        reg = registry_name(name)
        if reg is not None:
            registry[reg] = value
        else:
            kafka[name[len("kafka."):] if name.startswith("kafka.") else name] = value
    return for_librdkafka(kafka), registry


#: Java client properties librdkafka does not know, which a Java client.properties often holds:
#: None drops one (nothing to do in librdkafka), a text refuses it with that advice.
JAVA_ONLY: dict[str, str | None] = {
    "sasl.login.callback.handler.class": None,
    "sasl.client.callback.handler.class": None,
    "client.dns.lookup": None,
    "ssl.truststore.type": None,
    "ssl.keystore.type": None,
    "ssl.truststore.location": "librdkafka reads trusted certificates from a PEM file: use ssl.ca.location",
    "ssl.truststore.password": None,
}
_JAAS_OPTION = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")


def for_librdkafka(kafka: Mapping[str, str]) -> dict[str, str]:
    """Java client properties as librdkafka takes them: `sasl.jaas.config` (PLAIN or SCRAM
    login module) becomes `sasl.username` / `sasl.password`; Java-only settings are dropped or
    refused (see JAVA_ONLY)."""
    out = dict(kafka)
    jaas = out.pop("sasl.jaas.config", None)
    if jaas:
        options = {m.group(1): re.sub(r"\\(.)", r"\1", next(g for g in m.groups()[1:] if g is not None))
                   for m in _JAAS_OPTION.finditer(jaas)}
        if "username" not in options:
            raise StatementError("sasl.jaas.config: only login modules with username and password "
                                 "(PlainLoginModule, ScramLoginModule) can be given to librdkafka; "
                                 "for OAUTHBEARER use librdkafka's sasl.oauthbearer.* properties")
        out.setdefault("sasl.username", options["username"])
        out.setdefault("sasl.password", options.get("password", ""))
    for name in list(out):
        if name in JAVA_ONLY:
            if JAVA_ONLY[name] is not None:
                raise StatementError(f"Client property {name} is Java-only: {JAVA_ONLY[name]}")
            del out[name]
    return out


#: How many times the settings changed: what is built from them and kept (a decoding UDF holds
#: its registry's properties) compares it to know it is stale.
_version = 0


def version() -> int:
    return _version


def changed() -> None:
    """Something kept from the settings is stale (they changed, or a connection was created)."""
    global _version
    _version += 1


def configure(bootstrap: str | None, registry_url: str | None, properties: Mapping[str, str]) -> None:
    """Give every client for `bootstrap` and `registry_url` these properties (added to any set)."""
    redact.remember_properties(properties)
    kafka, registry = split(properties)
    redact.remember_properties(kafka)  # a password taken out of sasl.jaas.config
    with _lock:
        changed()
        if bootstrap and kafka:
            _kafka.setdefault(bootstrap, {}).update(kafka)
        if registry_url and registry:
            _registry.setdefault(_registry_key(registry_url), {}).update(registry)


def forget(bootstrap: str | None, registry_url: str | None, names) -> None:
    """UNSET: drop these properties from the clients of `bootstrap` and `registry_url`."""
    with _lock:
        changed()
        for name in names:
            reg = registry_name(name)
            if reg is not None:
                _registry.get(_registry_key(registry_url or ""), {}).pop(reg, None)
            else:
                _kafka.get(bootstrap or "", {}).pop(name[len("kafka."):] if name.startswith("kafka.") else name, None)


def kafka_properties(bootstrap: str) -> dict[str, str]:
    """The librdkafka properties configured for `bootstrap` (a connection's own: `Address`)."""
    if isinstance(bootstrap, Address):
        return dict(bootstrap.properties)
    with _lock:
        return dict(_kafka.get(bootstrap, {}))


def registry_properties(url: str) -> dict[str, str]:
    """The registry client properties configured for `url` (credentials in the URL excluded);
    a connection's own for an `Address`, its PEM texts as files (the client reads files)."""
    if isinstance(url, Address):
        return {PEM_FILES.get(name, name): _pem_file(value) if name in PEM_FILES else value
                for name, value in url.properties.items()}
    with _lock:
        return dict(_registry.get(_registry_key(url), {}))


#: PEM texts of a registry connection -> the registry client's file properties.
PEM_FILES = {"ssl.ca.pem": "ssl.ca.location", "ssl.certificate.pem": "ssl.certificate.location",
             "ssl.key.pem": "ssl.key.location"}
_pem_files: dict[str, str] = {}


def _pem_file(text: str) -> str:
    """A private file holding PEM `text`, written once per process."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    with _lock:
        path = _pem_files.get(digest)
        if path is None or not os.path.exists(path):
            fd, path = tempfile.mkstemp(prefix="kafkasql_", suffix=".pem")
            with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: readable by this user only
                f.write(text)
            _pem_files[digest] = path
        return path


def _registry_key(url: str) -> str:
    return redact.split_url(url.rstrip("/"))[0]


def registry_client_conf(url: str, base: Mapping[str, object], extra: Mapping[str, str] | None = None) -> dict:
    """A SchemaRegistryClient configuration for `url`: credentials in the URL become
    `basic.auth.user.info` (so no URL the client logs carries them), plus the configured
    properties for that registry."""
    clean, userinfo = redact.split_url(url.rstrip("/"))
    conf = {"url": clean, **base, **registry_properties(url), **(extra or {})}
    if userinfo is not None:  # the URL's own credentials win over configured ones
        conf["basic.auth.user.info"] = userinfo
    if "bearer.auth.token" in conf:
        conf.setdefault("bearer.auth.credentials.source", "STATIC_TOKEN")
    return conf


#: Source option prefix for secret client properties: Spark masks options whose names
#: contain "secret" in plans and the UI.
SECRET_OPTION = "secret.kafka."


def source_options(bootstrap: str) -> dict[str, str]:
    """The `kafkasql` source options carrying `bootstrap`'s client properties to the executors."""
    return {(SECRET_OPTION if redact.is_secret(name) else "kafka.") + name: value
            for name, value in kafka_properties(bootstrap).items()}


def shown(settings: Mapping[str, str], bootstrap: str | None, registry_url: str | None) -> dict[str, str]:
    """Session settings plus the configured client properties, masked for SHOW PROPERTIES."""
    merged = dict(kafka_properties(bootstrap or ""))
    merged.update({f"schema.registry.{k}": v for k, v in registry_properties(registry_url or "").items()})
    merged.update(settings)
    return redact.properties(merged)
