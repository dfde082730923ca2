"""Topic administration over confluent-kafka's AdminClient.

Every call has a timeout and raises `kafkasql_magic.errors.KafkaError` naming the bootstrap
servers when the broker does not answer: nothing here can hang a notebook.

Topic existence and partition counts come from DescribeTopics, never from a Metadata request
naming the topic: some brokers (Tansu) create a topic as a side effect of such a request.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple

from kafkasql_magic.errors import BrokerUnreachable, KafkaError
from kafkasql_magic.kafka.tls_probe import verify_failure

DEFAULT_TIMEOUT = 10.0
LOG = logging.getLogger("kafkasql_magic.kafka")
_LIBRDKAFKA_LOG = logging.getLogger("kafkasql_magic.kafka.librdkafka")
# librdkafka reports every failed connection attempt; keep that out of notebooks unless the
# application configures logging.
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

_ADMINS: dict[tuple, object] = {}
_REPORTERS: dict[tuple, "_Reported"] = {}  # the admin clients' error callbacks, by the same key
_UNREACHABLE_CODES = ("_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE")
_ADMINS_LOCK = threading.Lock()


class TopicListing(NamedTuple):
    """One row of `list_topics`: a (name, partitions) tuple with attribute access."""

    name: str
    partitions: int


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: tuple[int, ...]
    replication_factor: int


def client_conf(bootstrap: str, conf: Mapping[str, object] | None = None) -> dict:
    """A librdkafka configuration for `bootstrap`: the client properties configured for it
    (`kafkasql_magic.clientconf`) plus `conf`, logging into Python logging."""
    from kafkasql_magic import clientconf

    out = {"bootstrap.servers": bootstrap, "logger": _LIBRDKAFKA_LOG, **clientconf.kafka_properties(bootstrap)}
    if conf:
        out.update(conf)
    return out


class _Reported:
    """An admin client's `error_cb`: the last error librdkafka reported (a refused TLS handshake,
    a failed authentication), served when the client is polled."""

    def __init__(self):
        self.last: str | None = None

    def __call__(self, err) -> None:
        from confluent_kafka import KafkaError as CKError

        if err.code() != CKError._ALL_BROKERS_DOWN:  # says less than the error before it
            self.last = err.str()


def admin_client(bootstrap: str, conf: Mapping[str, object] | None = None):
    """A cached AdminClient per (bootstrap, conf); clients reconnect by themselves."""
    from confluent_kafka.admin import AdminClient

    settings = client_conf(bootstrap, conf)
    key = (bootstrap, tuple(sorted((k, str(v)) for k, v in settings.items() if k != "logger")))
    with _ADMINS_LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            reporter = _REPORTERS[key] = _Reported()
            admin = _ADMINS[key] = AdminClient({"error_cb": reporter, **settings})
        return admin


def drop_clients(bootstrap: str) -> None:
    """Forget the cached clients of `bootstrap` (e.g. when an embedded broker stops)."""
    with _ADMINS_LOCK:
        for key in [k for k in _ADMINS if k[0] == bootstrap]:
            del _ADMINS[key]
            _REPORTERS.pop(key, None)


def reported_error(bootstrap: str) -> str | None:
    """The last error the admin clients of `bootstrap` reported (taken: asked once), if any."""
    with _ADMINS_LOCK:
        clients = [(_ADMINS[k], _REPORTERS[k]) for k in _ADMINS if k[0] == bootstrap and k in _REPORTERS]
    found = None
    for client, reporter in clients:
        client.poll(0)
        found, reporter.last = reporter.last or found, None
    return found


def _unreachable(bootstrap: str, timeout: float, exc: BaseException | None = None) -> KafkaError:
    """Why no broker answered: librdkafka's own reason when a client reported one (TLS, SASL)."""
    reason = reported_error(bootstrap)
    if reason and "certificate verify failed" in reason:
        why = verify_failure(bootstrap, client_conf(bootstrap))
        reason += f" (OpenSSL's reason: {why})" if why else ""
    detail = f": {exc}" if exc is not None else ""
    return BrokerUnreachable(
        f"Kafka broker at {bootstrap} did not answer within {timeout:g}s{detail}"
        + (f" (the client's last error: {reason})" if reason else "")
    )


def _code(exc: BaseException):
    err = exc.args[0] if getattr(exc, "args", None) else None
    return err.code() if hasattr(err, "code") else None


def _is_unreachable(exc: BaseException) -> bool:
    from confluent_kafka import KafkaError as CKError

    code = _code(exc)
    return code is not None and code in {getattr(CKError, n) for n in _UNREACHABLE_CODES}


def _result(future, bootstrap: str, timeout: float):
    import concurrent.futures

    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError as exc:
        raise _unreachable(bootstrap, timeout) from exc


def list_topics(
    bootstrap: str,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    include_internal: bool = False,
) -> list[TopicListing]:
    """(name, partition count) of every topic, sorted by name; `__`-prefixed ones hidden."""
    from confluent_kafka import KafkaException

    try:
        md = admin_client(bootstrap, conf).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise _unreachable(bootstrap, timeout, exc) from exc
    out = []
    for name, topic in md.topics.items():
        if not include_internal and name.startswith("__"):
            continue
        if topic.error is not None:
            continue
        out.append(TopicListing(name, len(topic.partitions)))
    return sorted(out)


def describe_topic(
    bootstrap: str,
    topic: str,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> TopicInfo:
    """Partitions and replication of `topic`; KafkaError naming the topic if it does not exist."""
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException, TopicCollection

    admin = admin_client(bootstrap, conf)
    try:
        futures = admin.describe_topics(
            TopicCollection([topic]), request_timeout=timeout
        )
        desc = _result(futures[topic], bootstrap, timeout + 1)
    except KafkaException as exc:
        if _code(exc) == CKError.UNKNOWN_TOPIC_OR_PART:
            raise missing_topic(topic, bootstrap) from None
        if _is_unreachable(exc):
            raise _unreachable(bootstrap, timeout, exc) from exc
        raise KafkaError(f"Cannot describe topic {topic!r} (bootstrap {bootstrap}): {exc}") from exc
    parts = tuple(sorted(p.id for p in desc.partitions))
    if not parts:
        raise missing_topic(topic, bootstrap)
    rf = min((len(p.replicas) for p in desc.partitions), default=0)
    return TopicInfo(topic, parts, rf)


def missing_topic(topic: str, bootstrap: str) -> KafkaError:
    return KafkaError(f"Topic {topic!r} does not exist (bootstrap {bootstrap})")


def topic_partitions(
    bootstrap: str,
    topic: str,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[int]:
    """The partition ids of `topic`, sorted."""
    return list(describe_topic(bootstrap, topic, conf=conf, timeout=timeout).partitions)


def topic_exists(bootstrap: str, topic: str, *, conf=None, timeout: float = DEFAULT_TIMEOUT) -> bool:
    try:
        describe_topic(bootstrap, topic, conf=conf, timeout=timeout)
        return True
    except KafkaError as exc:
        if "does not exist" in str(exc):
            return False
        raise


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    *,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
    exist_ok: bool = False,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> bool:
    """Create `topic` and wait until its metadata shows every partition.

    Returns True if it was created, False if it already existed (only with `exist_ok`).
    """
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    admin = admin_client(bootstrap, conf)
    new = NewTopic(
        topic,
        num_partitions=int(partitions),
        replication_factor=int(replication_factor),
        config=dict(config or {}),
    )
    created = True
    try:
        futures = admin.create_topics([new], request_timeout=timeout, operation_timeout=timeout)
        _result(futures[topic], bootstrap, timeout + 1)
    except KafkaException as exc:
        if _code(exc) != CKError.TOPIC_ALREADY_EXISTS:
            if _is_unreachable(exc):
                raise _unreachable(bootstrap, timeout, exc) from exc
            raise KafkaError(f"Cannot create topic {topic!r} (bootstrap {bootstrap}): {exc}") from exc
        if not exist_ok:
            raise KafkaError(f"Topic {topic!r} already exists (bootstrap {bootstrap})") from None
        created = False

    def visible():
        try:
            return len(describe_topic(bootstrap, topic, conf=conf, timeout=timeout).partitions) > 0
        except KafkaError as exc:
            if "does not exist" in str(exc):
                return False
            raise

    if not _wait_for(visible, timeout):
        raise KafkaError(f"Topic {topic!r} did not appear within {timeout:g}s (bootstrap {bootstrap})")
    return created


def delete_topic(
    bootstrap: str,
    topic: str,
    *,
    missing_ok: bool = False,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> bool:
    """Delete `topic` and wait until it is gone. Returns False if it did not exist."""
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException

    admin = admin_client(bootstrap, conf)
    try:
        futures = admin.delete_topics([topic], request_timeout=timeout, operation_timeout=timeout)
        _result(futures[topic], bootstrap, timeout + 1)
    except KafkaException as exc:
        if _code(exc) == CKError.UNKNOWN_TOPIC_OR_PART:
            if missing_ok:
                return False
            raise missing_topic(topic, bootstrap) from None
        if _is_unreachable(exc):
            raise _unreachable(bootstrap, timeout, exc) from exc
        raise KafkaError(f"Cannot delete topic {topic!r} (bootstrap {bootstrap}): {exc}") from exc
    if not _wait_for(lambda: not topic_exists(bootstrap, topic, conf=conf, timeout=timeout), timeout):
        raise KafkaError(f"Topic {topic!r} still exists {timeout:g}s after deletion (bootstrap {bootstrap})")
    return True


def list_offsets(
    bootstrap: str,
    topic: str,
    partitions: Iterable[int],
    spec: str,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[int, tuple[int, int]]:
    """ListOffsets for `partitions` in one request per leader.

    `spec` is "earliest" or "latest". Returns {partition: (offset, timestamp)} exactly as the
    broker answered (the timestamp is -1 on Apache Kafka for both specs). The isolation level
    follows `conf["isolation.level"]` (default read_uncommitted).
    """
    from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    parts = list(partitions)
    if not parts:
        return {}
    level = str((conf or {}).get("isolation.level", "read_uncommitted")).lower()
    isolation = (
        IsolationLevel.READ_COMMITTED if level == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    )
    make = OffsetSpec.earliest if spec == "earliest" else OffsetSpec.latest
    request = {TopicPartition(topic, p): make() for p in parts}
    admin = admin_client(bootstrap, conf)
    try:
        futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=timeout)
    except KafkaException as exc:
        raise _unreachable(bootstrap, timeout, exc) from exc
    out = {}
    for tp, fut in futures.items():
        try:
            res = _result(fut, bootstrap, timeout + 1)
        except KafkaException as exc:
            if _is_unreachable(exc):
                raise _unreachable(bootstrap, timeout, exc) from exc
            # Distinguish a vanished topic from other failures.
            describe_topic(bootstrap, topic, conf=conf, timeout=timeout)
            raise KafkaError(
                f"Cannot list offsets of topic {topic!r} partition {tp.partition} "
                f"(bootstrap {bootstrap}): {exc}"
            ) from exc
        out[tp.partition] = (res.offset, res.timestamp)
    return out


def cluster_id(bootstrap: str, *, conf=None, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The cluster id (DescribeCluster, else a Metadata request for all topics)."""
    from confluent_kafka import KafkaException

    admin = admin_client(bootstrap, conf)
    try:
        return _result(admin.describe_cluster(request_timeout=timeout), bootstrap, timeout + 1).cluster_id or ""
    except KafkaException:
        pass  # DescribeCluster needs Kafka 2.8+: fall back to a Metadata request.
    try:
        md = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise _unreachable(bootstrap, timeout, exc) from exc
    return md.cluster_id or ""
