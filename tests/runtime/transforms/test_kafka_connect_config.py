"""A sink connector config written for Kafka Connect, with a three-transform chain and a predicate, runs unchanged on
a standalone worker against the real broker, and its task is handed what Kafka Connect's own transforms make of the
same records (issue 22)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from support import recording_sink
from support.connectors import ALLOWED_MODULES
from support.java_transforms import JavaTransforms
from support.rest_worker import RestWorker, wait_until
from support.transform_parity import comparable, from_record

KAFKA_CONNECT_CONFIG = """{
  "connector.class": "support.recording_sink:RecordingSink",
  "tasks.max": "1",
  "topics": "%(topic)s",
  "key.converter": "org.apache.kafka.connect.storage.StringConverter",
  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
  "value.converter.schemas.enable": "false",
  "transforms": "dropTombstones,maskPii,addOrigin",
  "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
  "transforms.dropTombstones.predicate": "isTombstone",
  "transforms.maskPii.type": "org.apache.kafka.connect.transforms.MaskField$Value",
  "transforms.maskPii.fields": "email,phone",
  "transforms.addOrigin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
  "transforms.addOrigin.topic.field": "kafka_topic",
  "transforms.addOrigin.offset.field": "kafka_offset",
  "transforms.addOrigin.static.field": "pipeline",
  "transforms.addOrigin.static.value": "orders-archive",
  "predicates": "isTombstone",
  "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"
}"""
"""As a Kafka Connect user writes it (only connector.class names the test's sink)."""

ROWS: list[tuple[str, dict[str, Any] | None]] = [
    ("o1", {"id": 1, "email": "a@example.com", "phone": "555-0100", "total": 12.5}),
    ("o2", {"id": 2, "email": "b@example.com", "total": 7}),
    ("o1", None),
    ("o3", {"id": 3, "email": None, "phone": "555-0199", "items": ["x", "y"], "total": 0}),
    ("o4", None),
    ("o5", {"id": 5, "nested": {"email": "kept@example.com"}}),
]


@pytest.fixture
def worker(kafka_bootstrap: str, tmp_path: Path) -> Iterator[RestWorker]:
    props = {
        "bootstrap.servers": kafka_bootstrap,
        "listeners": "http://127.0.0.1:0",
        "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": 200,
        **ALLOWED_MODULES,
    }
    path = tmp_path / "worker.properties"
    path.write_text(format_properties(props), encoding="utf-8")
    worker = RestWorker(StandaloneWorker(read_properties(path), []))
    yield worker
    worker.stop()


def produce(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Write :data:`ROWS` to partition 0 of ``topic``; return them as Kafka Connect's sink would see them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    records = []
    for offset, (key, value) in enumerate(ROWS):
        timestamp = 1_700_000_000_000 + offset
        producer.produce(topic, None if value is None else json.dumps(value), key, 0, timestamp=timestamp)
        records.append(
            {
                "topic": topic,
                "partition": 0,
                "offset": offset,
                "key": key,
                "value": value,
                "timestamp": timestamp,
                "headers": [],
            }
        )
    assert producer.flush(30) == 0
    return records


@pytest.mark.kafka
def test_a_kafka_connect_sink_config_with_three_transforms_and_a_predicate_gives_what_java_gives(
    worker: RestWorker, kafka_bootstrap: str, unique_name: str, java_transforms: JavaTransforms
) -> None:
    config = json.loads(KAFKA_CONNECT_CONFIG % {"topic": unique_name})
    records = produce(kafka_bootstrap, unique_name)
    validated = worker.http.put(
        "/connector-plugins/support.recording_sink:RecordingSink/config/validate", json={**config, "name": unique_name}
    ).json()
    assert validated["error_count"] == 0, validated

    worker.create(unique_name, config)
    worker.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    wait_until(lambda: len(recording_sink.RECEIVED.get(unique_name, [])) >= 4, "the transformed records")

    java = [
        answer
        for answer in java_transforms.apply(
            {key: value for key, value in config.items() if key.startswith(("transforms", "predicates"))}, records
        )
        if answer is not None
    ]
    ours = [from_record(record) for record in recording_sink.RECEIVED[unique_name]]
    assert [comparable(mine) for mine in ours] == [comparable(kafka) for kafka in java]
    assert [record["value"]["email"] for record in ours[:2]] == ["", ""], "masked as Kafka masks a string"
    assert len(ours) == 4, "both tombstones dropped by the predicate-guarded Filter"
