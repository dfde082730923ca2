"""Secrets out of sight: one place decides what is secret and how it is masked.

A property is secret when its name says so (`*password*`, `*secret*`, `sasl.jaas.config`,
`basic.auth.user.info`, tokens, credentials); its value shows as ksqlDB (and Kafka's
`ConfigDef.Password`) shows one: `[hidden]`. Credentials in URLs (`http://user:pw@host`) show as
`http://[hidden]@host`. Secret values given to the project are also remembered, so a message that
echoes one (a client library's error, a log line) is masked wherever it ends up: error messages,
the processing log, widgets and Python logging all pass through `text`.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

HIDDEN = "[hidden]"

#: Property names whose values are secret (matched anywhere in the name, case-insensitively).
SECRET_NAME = re.compile(
    r"password|secret|token|credential|jaas\.config|basic\.auth\.user\.info|private|ssl\.key\.pem"
    r"|keystore\.key|api\.key",
    re.IGNORECASE,
)
#: `scheme://user:password@` or `scheme://token@` in any text.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@'\"]+)@")
#: Values shorter than this are not masked by value (a 1-character password would mask every 'a').
_MIN_REMEMBERED = 4

_remembered: set[str] = set()
_lock = threading.Lock()


def is_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(str(name)))


def remember(value: object) -> None:
    """Mask `value` in every text from now on (secret property values, URL passwords)."""
    text = str(value or "")
    if len(text) < _MIN_REMEMBERED:
        return
    with _lock:
        _remembered.add(text)
        if ":" in text:  # user:password (basic.auth.user.info): the password alone too
            password = text.split(":", 1)[1]
            if len(password) >= _MIN_REMEMBERED:
                _remembered.add(password)


def remember_properties(properties: Mapping[str, object]) -> None:
    for name, value in properties.items():
        if is_secret(name):
            remember(value)
        elif isinstance(value, str) and "://" in value:
            remember_url(value)


def remember_url(url: str) -> None:
    """Remember the password in `url`'s credentials, if any."""
    for match in _URL_CREDENTIALS.finditer(url or ""):
        userinfo = match.group("userinfo")
        if ":" in userinfo:
            remember(unquote(userinfo.split(":", 1)[1]))
            remember(userinfo.split(":", 1)[1])


def url(value: str | None) -> str | None:
    """`value` with any credentials in it replaced by `[hidden]`."""
    if value is None:
        return None
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{HIDDEN}@", str(value))


def split_url(value: str) -> tuple[str, str | None]:
    """(the URL without credentials, "user:password" or None): clients get the credentials
    as a setting, so no library ever logs or echoes a URL that carries them."""
    parts = urlsplit(value)
    if "@" not in parts.netloc:
        return value, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    remember(unquote(password))
    return urlunsplit(parts._replace(netloc=host)), f"{unquote(user)}:{unquote(password)}"


def text(value: object) -> str:
    """`value` as text with URL credentials and every remembered secret masked."""
    out = url(str(value))
    with _lock:
        secrets = sorted(_remembered, key=len, reverse=True)
    for secret in secrets:
        if secret in out:
            out = out.replace(secret, HIDDEN)
    return out


def properties(values: Mapping[str, object]) -> dict[str, str]:
    """Properties as they may be shown: secret values `[hidden]`, URLs without credentials."""
    return {name: HIDDEN if is_secret(name) else text(value) for name, value in values.items()}


class RedactingFilter(logging.Filter):
    """Masks secrets in a log record's message (and drops its args once formatted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = text(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


_FILTER = RedactingFilter()
#: Loggers that may carry a URL or a client setting: the registry client's HTTP stack and ours.
LOGGERS = ("httpx", "httpcore", "urllib3", "confluent_kafka", "kafkasql_magic",
           "kafkasql_magic.kafka", "kafkasql_magic.kafka.librdkafka", "kafkasql_magic.kafka.source",
           "kafkasql_magic.registry", "kafkasql_magic.runtime", "py4j", "py4j.clientserver",
           "py4j.java_gateway")


def install_log_filter() -> None:
    """Attach the redacting filter to every logger that may see a secret (idempotent).
    A logger's filters see only records logged on that logger, hence the list."""
    names = set(LOGGERS) | {n for n in logging.root.manager.loggerDict if n.startswith("kafkasql_magic")}
    for name in names:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)
