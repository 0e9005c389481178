"""``GET /metrics`` of a standalone worker on the real broker, scraped while connectors run: a source with heartbeats
on counts exactly the records it polled and the broker stored, and the heartbeats the heartbeat topic holds; a sink
under ``errors.tolerance=all`` counts what it read, put, skipped and sent to its dead-letter topic (one bad record),
its lag reaches 0, and its commit counters move; the ``metrics.port`` listener serves the same numbers."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from support.rest_worker import RestWorker, sink_config, source_config, wait_until

pytestmark = pytest.mark.kafka

MakeWorker = Callable[..., RestWorker]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(http: httpx.Client | str) -> Samples:
    """Every sample of one scrape, by name and labels."""
    response = http.get("/metrics") if isinstance(http, httpx.Client) else httpx.get(http, timeout=30)
    assert response.status_code == 200, response.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def stored(bootstrap: str, topic: str) -> int:
    """Records in partition 0 of ``topic`` (nothing is compacted away: the active segment never is)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-test-watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    finally:
        consumer.close()
    return int(high - low)


def test_a_source_with_heartbeats_counts_what_it_moved(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, unique_name: str
) -> None:
    worker = make_rest_worker()
    topic, heartbeats_topic = f"{unique_name}-data", f"{unique_name}-heartbeats"
    config = source_config(topic, max_messages=20, heartbeat_interval_ms=300, heartbeat_records_topic=heartbeats_topic)
    worker.create(unique_name, config)
    task = {"connector": unique_name, "task": "0"}

    def sent_and_heartbeating() -> Samples | None:
        found = scrape(worker.http)
        polled = sample(found, "headwater_connect_source_task_record_poll_total", **task)
        heartbeats = sample(found, "headwater_connect_source_task_heartbeat_records_total", **task) or 0
        return found if polled == 20 and heartbeats >= 2 else None

    wait_until(sent_and_heartbeating, "20 records polled and 2 heartbeats sent")
    assert worker.http.put(f"/connectors/{unique_name}/pause").status_code == 202
    worker.wait_for_states(unique_name, "PAUSED", ["PAUSED"])  # no more polls, no more heartbeats
    partition = {"task.id": f"{unique_name}-0"}
    worker.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"saved": 19}}])  # a paused source commits

    def all_acknowledged() -> Samples | None:
        found = scrape(worker.http)
        active = sample(found, "headwater_connect_source_task_record_active_count", **task)
        return found if active == 0 else None

    found = wait_until(all_acknowledged, "every record acknowledged")
    heartbeats = sample(found, "headwater_connect_source_task_heartbeat_records_total", **task)
    assert sample(found, "headwater_connect_source_task_record_poll_total", **task) == 20
    assert stored(kafka_bootstrap, topic) == 20
    assert heartbeats is not None and stored(kafka_bootstrap, heartbeats_topic) == heartbeats
    assert sample(found, "headwater_connect_source_task_record_write_total", **task) == 20 + heartbeats
    assert sample(found, "headwater_connect_task_offset_commit_failure_total", **task) == 0
    assert sample(found, "headwater_connect_worker_connector_count", state="paused") == 1
    assert sample(found, "headwater_connect_task_status", state="paused", **task) == 1
    label = json.dumps(partition, separators=(",", ":"))
    assert sample(found, "headwater_connect_source_task_offset_unchanged_seconds", partition=label, **task) is not None
    polls = sample(found, "headwater_connect_source_task_poll_batch_seconds_count", **task)
    assert polls is not None and polls >= 20
    commits = sample(found, "headwater_connect_task_offset_commit_success_total", **task)
    assert commits is not None and commits >= 1
    wait_until(  # a paused source still commits at every offset.flush.interval.ms
        lambda: (
            (sample(scrape(worker.http), "headwater_connect_task_offset_commit_success_total", **task) or 0) > commits
        ),
        "the commit counter moving",
    )


def test_a_sink_counts_reads_puts_and_a_skipped_bad_record_and_catches_up(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, unique_name: str
) -> None:
    worker = make_rest_worker(metrics_port=0)
    topic = f"{unique_name}-in"
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(10):
        producer.produce(topic, json.dumps({"n": n}).encode())
        if n == 4:
            producer.produce(topic, b"{not json")
    assert producer.flush(30) == 0
    dead_letters = f"{unique_name}-dlq"
    config = sink_config(
        topic,
        value_converter="json",
        value_converter_schemas_enable="false",
        errors_tolerance="all",
        errors_deadletterqueue_topic_name=dead_letters,
        errors_deadletterqueue_topic_replication_factor=1,
    )
    worker.create(unique_name, config)
    task = {"connector": unique_name, "task": "0"}

    def caught_up() -> Samples | None:
        found = scrape(worker.http)
        lag = sample(found, "headwater_connect_sink_task_partition_lag_records", topic=topic, partition="0", **task)
        active = sample(found, "headwater_connect_sink_task_record_active_count", **task)
        return found if lag == 0 and active == 0 else None

    found = wait_until(caught_up, "the sink's lag and active count reaching 0")
    assert sample(found, "headwater_connect_sink_task_record_read_total", **task) == 11
    assert sample(found, "headwater_connect_sink_task_record_send_total", **task) == 10
    assert sample(found, "headwater_connect_task_error_records_skipped_total", **task) == 1
    assert sample(found, "headwater_connect_task_error_record_errors_total", **task) == 1
    assert sample(found, "headwater_connect_task_error_record_failures_total", **task) == 1
    assert sample(found, "headwater_connect_task_error_deadletterqueue_produce_requests_total", **task) == 1
    assert sample(found, "headwater_connect_task_error_deadletterqueue_produce_failures_total", **task) == 0
    assert stored(kafka_bootstrap, dead_letters) == 1
    assert sample(found, "headwater_connect_sink_task_partition_count", **task) == 1
    commits = sample(found, "headwater_connect_task_offset_commit_success_total", **task)
    assert commits is not None and commits >= 1, "caught up means committed: the active count is 0"
    assert worker.offsets(unique_name) == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 11}}
    ]

    producer.produce(topic, json.dumps({"n": 10}).encode())
    assert producer.flush(30) == 0
    wait_until(
        lambda: sample(scrape(worker.http), "headwater_connect_sink_task_record_send_total", **task) == 11,
        "the next record put",
    )
    metrics_port = worker.standalone.metrics
    assert metrics_port is not None
    found = scrape(metrics_port.url)
    assert sample(found, "headwater_connect_sink_task_record_read_total", **task) == 12, "the same on metrics.port"
    assert (sample(found, "headwater_connect_task_offset_commit_success_total", **task) or 0) >= commits


def test_a_task_metric_of_its_own_is_served_with_its_labels_until_the_connector_goes(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, unique_name: str
) -> None:
    """KIP-877's plugin metrics on a real worker: the counter the task registers through its context counts what
    the broker stored, labelled with its connector and task; the connector's gauge has the connector label only;
    deleting the connector removes both."""
    worker = make_rest_worker()
    topic = f"{unique_name}-data"
    config = {"connector.class": "support.metered:MeteredSource", "topic": topic, "max.messages": "5"}
    worker.create(unique_name, config)
    task = {"connector": unique_name, "task": "0"}
    rows = "headwater_connect_plugin_rows_total"

    def all_acknowledged() -> Samples | None:
        found = scrape(worker.http)
        written = sample(found, "headwater_connect_source_task_record_write_total", **task)
        return found if sample(found, rows, **task) == 5 and written == 5 else None

    found = wait_until(all_acknowledged, "5 records counted by the task and acknowledged")
    assert stored(kafka_bootstrap, topic) == 5
    assert sample(found, "headwater_connect_plugin_batch_rows_count", **task) == 3, "batches of 2, 2, 1"
    assert sample(found, "headwater_connect_plugin_configured_tasks", connector=unique_name) == 1
    assert worker.http.delete(f"/connectors/{unique_name}").status_code == 204
    wait_until(
        lambda: not any(name.startswith("headwater_connect_plugin_") for name, _ in scrape(worker.http)),
        "the deleted connector's plugin metrics gone",
    )
