"""Whether the worker reaches its Kafka cluster: unreachable once a probe has failed and none answered for longer than
the bound, reachable again at the next answer; each change logged once. On fake clocks, and one watch on a thread
whose probe a test switches."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from headwater.runtime.transport.kafka import ClusterProbe
from headwater.runtime.transport.reachability import BrokerReachability
from support.clocks import Clocks
from support.rest_worker import wait_until

LOGGER = "headwater.runtime.transport.reachability"


def reachability(clocks: Clocks, bound_ms: int = 20_000) -> BrokerReachability:
    return BrokerReachability("kafka-1:9092,kafka-2:9092", bound_ms, lambda: clocks.monotonic, lambda: clocks.wall)


def test_unreachable_only_after_failures_longer_than_the_bound(clocks: Clocks) -> None:
    found = reachability(clocks)
    clocks.advance(60)  # no probe for a minute (none watching, say): nothing says the cluster is down
    assert found.reachable and found.unreachable_s() == 0
    found.answered()
    clocks.advance(5)
    found.failed("no answer within 5 s (Connect to ipv4#10.0.0.1:9092 failed: Connection refused)")
    assert found.reachable and found.unreachable_s() == pytest.approx(5)
    clocks.advance(15)
    assert found.reachable, "20 s without an answer is the bound itself, not past it"
    clocks.advance(0.5)
    assert not found.reachable
    assert found.unreachable_s() == pytest.approx(20.5)
    assert found.problem() == (
        "the worker cannot reach the Kafka cluster at kafka-1:9092,kafka-2:9092 (bootstrap.servers): no answer since "
        "2027-01-15T08:01:00+00:00 (20.5 s, more than health.broker.unreachable.ms=20000); last error: no answer "
        "within 5 s (Connect to ipv4#10.0.0.1:9092 failed: Connection refused)"
    )
    found.answered()
    assert found.reachable and found.unreachable_s() == 0 and found.problem() is None


def test_one_warning_per_outage_and_a_line_when_it_ends(clocks: Clocks, caplog: pytest.LogCaptureFixture) -> None:
    found = reachability(clocks, bound_ms=10_000)
    with caplog.at_level(logging.INFO, LOGGER):
        for _ in range(4):
            clocks.advance(5)
            found.failed("timed out")
        found.answered()
        clocks.advance(5)
        found.failed("timed out")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "cannot reach the Kafka cluster at kafka-1:9092,kafka-2:9092" in warnings[0]
    assert "GET /health answers 500" in warnings[0]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["the Kafka cluster at kafka-1:9092,kafka-2:9092 (bootstrap.servers) answers again, after 20.0 s "
                     "without an answer"]  # fmt: skip


def test_a_watch_asks_its_probe_until_stopped_and_then_closes_it() -> None:
    answering = threading.Event()
    answering.set()
    asked: list[float] = []
    closed = threading.Event()

    def probe(timeout_s: float) -> str | None:
        asked.append(timeout_s)
        return None if answering.is_set() else "no answer"

    found = BrokerReachability("kafka:9092", bound_ms=200)
    assert found.probe_interval_s == pytest.approx(0.05)
    found.watch(probe, closed.set)
    try:
        wait_until(lambda: len(asked) >= 2, "the probe being asked twice")
        assert found.reachable
        answering.clear()
        wait_until(lambda: not found.reachable, "the cluster counting as unreachable")
        assert "last error: no answer" in (found.problem() or "")
        answering.set()
        wait_until(lambda: found.reachable, "the cluster counting as reachable again")
    finally:
        found.stop()
    assert closed.is_set(), "the probe was not closed when the watch ended"
    assert asked == [pytest.approx(0.05)] * len(asked)


def test_a_probe_that_raises_counts_as_no_answer() -> None:
    def probe(timeout_s: float) -> str | None:
        raise OSError("network is unreachable")

    found = BrokerReachability("kafka:9092", bound_ms=100)
    found.watch(probe)
    try:
        wait_until(lambda: not found.reachable, "the cluster counting as unreachable")
    finally:
        found.stop()
    assert found.reachable, "a cluster no longer watched counts as reachable"


def test_the_kafka_probe_names_librdkafkas_reason() -> None:
    with socket.socket() as closed_port:  # bound, never listening: connections are refused
        closed_port.bind(("127.0.0.1", 0))
        port = closed_port.getsockname()[1]
        probe = ClusterProbe({"bootstrap.servers": f"127.0.0.1:{port}"})
        reason = probe(0.5)
        probe.close()
    assert reason is not None
    assert reason.startswith("no answer within 0.5 s"), reason
    assert f"Connect to ipv4#127.0.0.1:{port} failed: Connection refused" in reason
