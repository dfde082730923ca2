"""A broker that stops answering while a stream runs: wait for it, up to a limit.

Planning a micro-batch asks the broker for offsets. While it does not answer, the stream
plans no new data (the query stays up, reading nothing) instead of failing at once; librdkafka
reconnects by itself. Once the outage lasts longer than the limit, the query fails with a
message naming the broker and the limit. Option `brokerOutageTimeoutMs` of the `kafkasql`
source (ksql property 'kafkasql.broker.outage.timeout.ms'); 0 fails at the first miss.
"""

from __future__ import annotations

import logging
import time
from typing import Mapping

from kafkasql_magic.errors import BrokerUnreachable, KafkaError

LOG = logging.getLogger("kafkasql_magic.kafka.outage")
OPTION = "brokerOutageTimeoutMs"
#: The ksql property (SET) that sets the option on every new query's source.
PROPERTY = "kafkasql.broker.outage.timeout.ms"
DEFAULT_LIMIT_S = 60.0


def limit_of(options: Mapping[str, str]) -> float:
    raw = options.get(OPTION)
    if raw is None or str(raw).strip() == "":
        return DEFAULT_LIMIT_S
    try:
        value = float(str(raw).strip()) / 1000.0
    except ValueError:
        raise KafkaError(f"Option {OPTION} must be a number of milliseconds, not {raw!r}") from None
    if value < 0:
        raise KafkaError(f"Option {OPTION} must not be negative, not {raw!r}")
    return value


class BrokerOutage:
    """Tracks one stream's current outage: since when, and whether it is still tolerable."""

    def __init__(self, limit_s: float = DEFAULT_LIMIT_S, clock=time.monotonic):
        self.limit_s = limit_s
        self._clock = clock
        self.since: float | None = None

    def tolerate(self, exc: BrokerUnreachable) -> None:
        """Return while the outage is within the limit; raise KafkaError with the reason after."""
        now = self._clock()
        if self.since is None:
            self.since = now
            LOG.warning("%s; waiting up to %gs for it", exc, self.limit_s)
        if now - self.since >= self.limit_s:
            raise KafkaError(f"{exc}; gave up after waiting {now - self.since:.0f}s "
                             f"(limit '{PROPERTY}' = {self.limit_s * 1000:.0f} ms)") from None

    def clear(self) -> None:
        if self.since is not None:
            LOG.warning("The broker answers again after %.0fs", self._clock() - self.since)
        self.since = None
