"""Active-topic tracking (KIP-558) on the simulated worker: when a topic counts as used, what a reset forgets, and
that nothing is written when tracking is off (Kafka Connect's ``ConnectorTopicsIntegrationTest`` checks, and what
restarts, reconfigurations and stops keep)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector, SimulatedWorker
from headwater.runtime.storage.status import MemoryStatusStore

Make = Callable[..., SimulatedWorker]


def topics(worker: SimulatedWorker, connector: str) -> list[str]:
    return worker.herder.active_topics.topics(connector)


def topic_records(worker: SimulatedWorker) -> list[tuple[bytes, bytes | None]]:
    store = worker.herder.status_store
    assert isinstance(store, MemoryStatusStore)
    return [(key, value) for key, value in store.records if key.startswith(b"status-topic-")]


def source(worker: SimulatedWorker, name: str = "src", **config: Any) -> None:
    worker.add_connector(name, MonitorableSourceConnector, {"topic": "data", "max.messages": 2, **config})


def test_a_source_topic_counts_once_the_broker_acknowledged_a_record(
    make_simulated_worker: Make,
) -> None:
    worker = make_simulated_worker()
    worker.broker.hold_acks("data")
    source(worker)
    worker.advance(200)
    assert len(worker.messages("data")) == 2
    assert topics(worker, "src") == [], "sent but not acknowledged"
    worker.broker.release_acks("data")
    worker.advance(20)
    assert topics(worker, "src") == ["data"]
    (key, value), *_ = topic_records(worker)
    assert key == b"status-topic-data:connector-src"
    assert value is not None and b'"connector":"src","task":0' in value


def test_each_topic_is_written_once_however_many_records_use_it(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    source(worker, **{"max.messages": 50})
    worker.advance(500)
    assert len(worker.messages("data")) == 50
    assert len(topic_records(worker)) == 1


def test_the_heartbeat_topic_is_used_by_a_heartbeating_source(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 100})
    source(worker, **{"heartbeat.records.topic": "beats"})
    worker.advance(300)
    assert topics(worker, "src") == ["beats", "data"]


def test_a_sink_topic_counts_once_a_record_of_it_was_consumed(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.create_topic("idle")
    worker.produce("busy", {"n": 1})
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "busy,idle"})
    worker.advance(200)
    assert topics(worker, "snk") == ["busy"]


ROUTE = {
    "transforms": "route",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "raw",
    "transforms.route.replacement": "routed",
}
"""RegexRouter renaming ``raw`` to ``routed``."""


def test_a_source_topic_is_the_one_written_after_its_transforms(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    source(worker, topic="raw", **ROUTE)
    worker.advance(200)
    assert len(worker.messages("routed")) == 2
    assert topics(worker, "src") == ["routed"], "never the topic before RegexRouter, which was not written"


def test_a_sink_topic_is_the_one_its_put_receives_after_its_transforms(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.produce("raw", {"n": 1})
    worker.produce("kept", {"n": 2})
    worker.produce("dropped", {"n": 3})
    drop = {
        "transforms": "route,drop",
        "transforms.drop.type": "Filter",
        "transforms.drop.predicate": "is-dropped",
        "predicates": "is-dropped",
        "predicates.is-dropped.type": "TopicNameMatches",
        "predicates.is-dropped.pattern": "dropped",
    }
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "raw,kept,dropped", **ROUTE, **drop})
    worker.advance(200)
    assert topics(worker, "snk") == ["kept", "routed"], "renamed by RegexRouter; a dropped record names none"


def test_reset_forgets_idle_topics_and_used_ones_come_back(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.produce("a", {"n": 1})
    worker.produce("b", {"n": 1})
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "a,b"})
    worker.advance(200)
    assert topics(worker, "snk") == ["a", "b"]
    worker.herder.reset_active_topics("snk")
    assert topics(worker, "snk") == []
    assert [value for _, value in topic_records(worker)][-2:] == [None, None], "two tombstones"
    worker.advance(200)
    assert topics(worker, "snk") == [], "nothing flowed"
    worker.produce("b", {"n": 2})
    worker.advance(200)
    assert topics(worker, "snk") == ["b"]


def sent(make: Make, config: dict[str, Any] | None = None) -> SimulatedWorker:
    """A worker whose source ``src`` sent its records to ``data``."""
    worker = make(config)
    source(worker)
    worker.advance(200)
    return worker


def test_restart_reconfigure_and_stop_keep_the_topics(make_simulated_worker: Make) -> None:
    worker = sent(make_simulated_worker)
    worker.restart_connector("src")
    source(worker, **{"tasks.max": 2})
    worker.stop_connector("src")
    assert topics(worker, "src") == ["data"]


def test_delete_resets_the_topics(make_simulated_worker: Make) -> None:
    worker = sent(make_simulated_worker)
    worker.delete_connector("src")
    assert topics(worker, "src") == []
    assert topic_records(worker)[-1] == (b"status-topic-data:connector-src", None)


def test_disabled_tracking_writes_no_topic_record(make_simulated_worker: Make) -> None:
    worker = sent(make_simulated_worker, {"topic.tracking.enable": False})
    worker.delete_connector("src")
    assert topic_records(worker) == []
