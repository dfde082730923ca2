"""What a running query waits for: its Kafka broker or its Schema Registry, for progress and widgets.

Records are decoded on executors, which wait with back-off while the registry does not answer
(`formats.schema_registry.schema_by_id`), and offsets are planned in Spark's own Python worker,
which waits while the broker does not answer (`kafka.outage`). The session's process cannot
see into either, so it asks the broker and the registry itself, at most every PROBE_INTERVAL_S
per address, and remembers since when one has not answered.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

from . import redact

PROBE_INTERVAL_S = 2.0

_lock = threading.Lock()
#: url -> (monotonic time of the last probe, wall time the outage began or None)
_state: dict[str, tuple[float, datetime | None]] = {}


def registry_urls(source) -> list[str]:
    """The registry URLs a source's key and value formats decode with."""
    from .formats.schema_registry import URL_OPTION

    urls = []
    for fmt in (getattr(source, "key_format", None), getattr(source, "value_format", None)):
        url = (getattr(fmt, "options", None) or {}).get(URL_OPTION)
        if url and fmt.name in ("AVRO", "PROTOBUF") and url not in urls:
            urls.append(str(url))
    return urls


def down_since(url: str, *, probe=None) -> datetime | None:
    """When the registry (or broker) at `url` stopped answering (UTC), or None while it answers."""
    now = time.monotonic()
    with _lock:
        last, since = _state.get(url, (None, None))
        if last is not None and now - last < PROBE_INTERVAL_S:
            return since
    answering = (probe or _answers)(url)
    with _lock:
        since = None if answering else (_state.get(url, (None, None))[1] or datetime.now(timezone.utc))
        _state[url] = (now, since)
        return since


def _answers(url: str) -> bool:
    from .formats.schema_registry import is_transient
    from .registry.inference import registry_client

    try:
        registry_client(url).get_subjects()
    except Exception as exc:  # noqa: BLE001 - any failure to answer counts as down
        return not is_transient(exc)
    return True


def _broker_answers(bootstrap: str) -> bool:
    from .errors import KafkaError
    from .kafka import admin

    try:
        admin.cluster_id(bootstrap, timeout=PROBE_INTERVAL_S)
    except KafkaError:
        return False
    return True


def waiting_for(source, bootstrap: str | None = None) -> str | None:
    """"waiting for the schema registry at URL (not answering since HH:MM:SS UTC)" (or for the
    Kafka broker at ...), or None."""
    if bootstrap:
        since = down_since(f"kafka://{bootstrap}", probe=lambda _: _broker_answers(bootstrap))
        if since is not None:
            return f"waiting for the Kafka broker at {bootstrap} (not answering since {since:%H:%M:%S} UTC)"
    for url in registry_urls(source):
        since = down_since(url)
        if since is not None:
            return (f"waiting for the schema registry at {redact.url(url)} "
                    f"(not answering since {since:%H:%M:%S} UTC)")
    return None
