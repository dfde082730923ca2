"""Waiting out outages: the broker-outage tracker and the driver's view of what a query waits for."""

from __future__ import annotations

import pytest

from kafkasql_magic import waiting
from kafkasql_magic.errors import BrokerUnreachable, KafkaError
from kafkasql_magic.kafka.outage import BrokerOutage, limit_of


def test_broker_outage_is_tolerated_until_its_limit():
    now = [100.0]
    outage = BrokerOutage(5.0, clock=lambda: now[0])
    down = BrokerUnreachable("Kafka broker at h:1 did not answer within 10s")
    outage.tolerate(down)
    now[0] = 104.0
    outage.tolerate(down)
    now[0] = 105.5
    with pytest.raises(KafkaError, match=r"gave up after waiting 6s \(limit 'kafkasql.broker.outage.timeout.ms' = 5000 ms\)"):
        outage.tolerate(down)


def test_an_answer_ends_the_outage():
    now = [0.0]
    outage = BrokerOutage(5.0, clock=lambda: now[0])
    outage.tolerate(BrokerUnreachable("down"))
    now[0] = 4.0
    outage.clear()
    now[0] = 8.0
    outage.tolerate(BrokerUnreachable("down"))  # a new outage: its own 5 s
    assert outage.since == 8.0


def test_outage_limit_option():
    assert limit_of({}) == 60.0
    assert limit_of({"brokerOutageTimeoutMs": "2500"}) == 2.5
    with pytest.raises(KafkaError, match="milliseconds"):
        limit_of({"brokerOutageTimeoutMs": "soon"})


def test_down_since_remembers_the_start_of_an_outage(monkeypatch):
    monkeypatch.setattr(waiting, "PROBE_INTERVAL_S", 0.0)
    answers = iter([False, False, True])
    url = "http://unit-probe:1"
    first = waiting.down_since(url, probe=lambda u: next(answers))
    assert first is not None
    assert waiting.down_since(url, probe=lambda u: next(answers)) == first
    assert waiting.down_since(url, probe=lambda u: next(answers)) is None
