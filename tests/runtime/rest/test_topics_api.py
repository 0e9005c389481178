"""Active topics (KIP-558) over HTTP: KIP-558's three curl examples, sources (heartbeats included) and sinks,
resets, disabled tracking, the status-topic records, and deletion resetting a connector's topics. On the in-memory
worker, but for a sink consuming the real log and the records in a real status topic."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from headwater.harness.kafka_worker import RawRecords
from headwater.harness.monitorable import HANDLES, RuntimeHandles
from headwater.runtime.storage import KafkaStatusStore, MemoryStatusStore
from support.rest_worker import MemoryRestWorker, RestClient, RestWorker, sink_config, source_config, wait_until

MakeWorker = Callable[..., RestWorker]
MakeMemory = Callable[..., MemoryRestWorker]


def produce(bootstrap: str, topic: str, count: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(count):
        producer.produce(topic, json.dumps({"n": n}).encode())
    assert producer.flush(30) == 0


def wait_for_topics(worker: RestClient, name: str, expected: list[str]) -> None:
    wait_until(lambda: worker.topics(name) == expected, f"{name}'s active topics becoming {expected}")


# ---- KIP-558's examples ----------------------------------------------------------------------------------------------


def test_kip_558_list_a_connectors_topics(live_rest: MemoryRestWorker, unique_name: str) -> None:
    topic = f"{unique_name}-foo"
    live_rest.create(unique_name, source_config(topic))
    wait_for_topics(live_rest, unique_name, [topic])
    response = live_rest.http.get(f"/connectors/{unique_name}/topics")
    assert response.status_code == 200
    assert response.json() == {unique_name: {"topics": [topic]}}


def test_kip_558_reset_a_connectors_topics(live_rest: MemoryRestWorker, unique_name: str) -> None:
    topic = f"{unique_name}-foo"
    live_rest.create(unique_name, source_config(topic))
    wait_for_topics(live_rest, unique_name, [topic])
    partition = {"task.id": f"{unique_name}-0"}
    live_rest.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"saved": 2}}])  # all acknowledged
    response = live_rest.http.put(f"/connectors/{unique_name}/topics/reset")
    assert response.status_code == 202
    assert response.content == b""
    assert live_rest.topics(unique_name) == []
    live_rest.herder.tick()  # the source sent its 3 records: an idle topic does not come back
    assert live_rest.topics(unique_name) == []


def test_kip_558_reset_when_not_allowed(make_live_rest: MakeMemory, unique_name: str) -> None:
    worker = make_live_rest(topic_tracking_allow_reset="false")
    topic = f"{unique_name}-foo"
    worker.create(unique_name, source_config(topic))
    wait_for_topics(worker, unique_name, [topic])
    response = worker.http.put(f"/connectors/{unique_name}/topics/reset")
    assert response.status_code == 403
    assert response.json() == {"error_code": 403, "message": "Topic tracking reset is disabled."}
    assert worker.topics(unique_name) == [topic]
    assert worker.http.delete(f"/connectors/{unique_name}").status_code == 204
    assert worker.topics(unique_name) == [], "deleting still resets the topics"


# ---- what is recorded ---------------------------------------------------------------------------------------------


def test_unknown_connector_has_no_topics(live_rest: MemoryRestWorker) -> None:
    response = live_rest.http.get("/connectors/ghost/topics")
    assert response.status_code == 200
    assert response.json() == {"ghost": {"topics": []}}
    assert live_rest.http.put("/connectors/ghost/topics/reset").status_code == 202


def test_heartbeat_topic_is_an_active_topic_of_the_source(live_rest: MemoryRestWorker, unique_name: str) -> None:
    data, heartbeats = f"{unique_name}-data", f"{unique_name}-hb"
    config = source_config(data, heartbeat_interval_ms=100, heartbeat_records_topic=heartbeats)
    live_rest.create(unique_name, config)
    wait_for_topics(live_rest, unique_name, sorted([data, heartbeats]))


@pytest.mark.kafka
def test_sink_topics_are_recorded_when_consumed_and_come_back_after_a_reset_only_when_used(
    rest_worker: RestWorker, kafka_bootstrap: str, unique_name: str
) -> None:
    first, second = f"{unique_name}-a", f"{unique_name}-b"
    produce(kafka_bootstrap, first)
    produce(kafka_bootstrap, second)
    rest_worker.create(unique_name, sink_config(f"{first},{second}"))
    wait_for_topics(rest_worker, unique_name, [first, second])
    assert rest_worker.http.put(f"/connectors/{unique_name}/topics/reset").status_code == 202
    assert rest_worker.topics(unique_name) == []
    produce(kafka_bootstrap, first)
    wait_for_topics(rest_worker, unique_name, [first])
    rest_worker.herder.tick()
    assert rest_worker.topics(unique_name) == [first], "the idle topic stays gone"


@pytest.mark.kafka
def test_a_sources_topic_is_the_one_it_wrote_after_regex_router(
    rest_worker: RestWorker, raw_records: RawRecords, unique_name: str
) -> None:
    raw, routed = f"{unique_name}-raw", f"{unique_name}-routed"
    route = {
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)-raw",
        "transforms.route.replacement": "$1-routed",
    }
    rest_worker.create(unique_name, {**source_config(raw), **route})
    wait_for_topics(rest_worker, unique_name, [routed])
    assert len(raw_records(routed)) == 3
    rest_worker.wait_for_offsets(unique_name, [{"partition": {"task.id": f"{unique_name}-0"}, "offset": {"saved": 2}}])
    rest_worker.herder.tick()
    assert rest_worker.topics(unique_name) == [routed], f"never {raw}, which the connector did not write"


def test_restart_keeps_the_topics(live_rest: MemoryRestWorker, unique_name: str) -> None:
    topic = f"{unique_name}-t"
    live_rest.create(unique_name, source_config(topic))
    wait_for_topics(live_rest, unique_name, [topic])
    assert live_rest.http.post(f"/connectors/{unique_name}/restart?includeTasks=true").status_code == 202
    assert live_rest.http.put(f"/connectors/{unique_name}/stop").status_code == 204
    assert live_rest.topics(unique_name) == [topic]


# ---- tracking disabled ---------------------------------------------------------------------------------------------


@pytest.mark.kafka
def test_disabled_tracking_forbids_both_endpoints_and_writes_no_topic_records(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    status_topic = f"{unique_name}-status"
    store = KafkaStatusStore(kafka_bootstrap, status_topic, partitions=1, timeout_ms=10_000)
    worker = make_rest_worker(status_store=store, topic_tracking_enable="false")
    worker.create(unique_name, source_config(f"{unique_name}-t"))
    wait_until(lambda: worker.herder.offsets.get(unique_name, "source"), "the source committing its offsets")
    worker.herder.tick()
    for response in (
        worker.http.get(f"/connectors/{unique_name}/topics"),
        worker.http.put(f"/connectors/{unique_name}/topics/reset"),
    ):
        assert response.status_code == 403
        assert response.json() == {"error_code": 403, "message": "Topic tracking is disabled."}
    keys = [key.decode() for _, key, _ in raw_records(status_topic) if key is not None]
    assert f"status-connector-{unique_name}" in keys
    assert not [key for key in keys if key.startswith("status-topic-")]


# ---- the status topic ------------------------------------------------------------------------------------------


@pytest.mark.kafka
def test_status_topic_holds_the_topic_record_and_the_reset_tombstone(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    status_topic, topic = f"{unique_name}-status", f"{unique_name}-foo"
    store = KafkaStatusStore(kafka_bootstrap, status_topic, partitions=1, timeout_ms=10_000)
    worker = make_rest_worker(status_store=store)
    worker.create(unique_name, source_config(topic))
    wait_for_topics(worker, unique_name, [topic])
    key = f"status-topic-{topic}:connector-{unique_name}".encode()
    (value,) = [value for _, found, value in raw_records(status_topic) if found == key]
    assert value is not None
    record = json.loads(value)
    assert set(record) == {"topic"}
    assert {k: v for k, v in record["topic"].items() if k != "discoverTimestamp"} == {
        "name": topic,
        "connector": unique_name,
        "task": 0,
    }
    assert isinstance(record["topic"]["discoverTimestamp"], int) and record["topic"]["discoverTimestamp"] > 0
    assert worker.http.put(f"/connectors/{unique_name}/topics/reset").status_code == 202
    assert [value for _, found, value in raw_records(status_topic) if found == key] == [value, None]


# ---- deletion -----------------------------------------------------------------------------------------------------


class RecordingStatusStore(MemoryStatusStore):
    """Reports every topic reset into the runtime handles, so its order against the plugins' stops shows."""

    def delete_topics(self, connector: str) -> None:
        HANDLES.record(connector, None, "delete_topics")
        super().delete_topics(connector)


def test_delete_stops_tasks_then_connector_with_true_then_resets_the_topics(
    make_live_rest: MakeMemory, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    worker = make_live_rest(status_store=RecordingStatusStore())
    topic = f"{unique_name}-t"
    worker.create(unique_name, source_config(topic, tasks_max=2))
    wait_for_topics(worker, unique_name, [topic])
    assert worker.http.delete(f"/connectors/{unique_name}").status_code == 204
    events = [(t, event, detail) for c, t, event, detail in runtime_handles.events if c == unique_name]
    tail = events[-4:]
    assert sorted(tail[:2]) == [(0, "stop", True), (1, "stop", True)]
    assert tail[2:] == [(None, "stop", True), (None, "delete_topics", None)]
    assert worker.topics(unique_name) == []
