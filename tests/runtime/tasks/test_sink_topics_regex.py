"""A sink on ``topics.regex`` consumes every topic whose whole name matches, including topics created after its task
started (Kafka Connect's ``WorkerSinkTask`` subscribes with the pattern; the consumer finds new topics when it
refreshes its metadata, every ``metadata.max.age.ms``), on the in-memory broker and on a real one; ``topics`` and
``topics.regex`` are mutually exclusive, in Kafka Connect's words."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, check_connector_config, validate_connector_config
from headwater.sdk import SinkRecord
from headwater.sdk.errors import ConfigError
from headwater.sdk.records import TopicPartition
from support.recording_sink import RECEIVED, RecordingSink

Make = Callable[..., SimulatedWorker]
CONFIG = {"offset.flush.interval.ms": 100}
DEADLINE_MS = 600_000  # virtual: on a real broker each pass also waits up to 20 ms of real time for records


@pytest.fixture(autouse=True)
def received() -> Iterator[dict[str, list[SinkRecord]]]:
    RECEIVED.clear()
    yield RECEIVED
    RECEIVED.clear()


def consumed(topic: str) -> list[Any]:
    return [record.value for record in RECEIVED.get("sink", []) if record.topic == topic]


def test_a_sink_on_a_pattern_consumes_matching_topics_and_one_created_after_it_started(
    make_worker: Make, unique_name: str
) -> None:
    worker = make_worker(CONFIG)
    first, later, other = f"{unique_name}-orders-1", f"{unique_name}-orders-2", f"{unique_name}-audit"
    worker.create_topic(first, 1)
    worker.create_topic(other, 1)
    worker.produce(first, {"n": 1})
    worker.produce(other, {"n": 0})
    worker.add_connector(
        "sink",
        RecordingSink,
        {
            "topics.regex": f"{unique_name}-orders-.*",
            # the consumer looks for new topics this often (real time; Kafka's default is 5 minutes)
            "consumer.override.metadata.max.age.ms": "500",
        },
    )
    worker.run_until(lambda: consumed(first) == [{"n": 1}], DEADLINE_MS, "the record of the first topic")
    worker.create_topic(later, 2)
    worker.produce(later, {"n": 2})
    worker.run_until(lambda: consumed(later) == [{"n": 2}], DEADLINE_MS, "the record of the topic created later")
    worker.produce(first, {"n": 3})
    worker.run_until(lambda: consumed(first) == [{"n": 1}, {"n": 3}], DEADLINE_MS, "a new record of the first")
    assert consumed(other) == [], "a topic that does not match is not consumed"
    assert worker.sink_task("sink").consumer.assignment() >= {*_partitions(first, 1), *_partitions(later, 2)}


def _partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


def test_the_pattern_matches_whole_topic_names_only(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    for topic in ("orders", "orders-eu", "old-orders"):
        worker.create_topic(topic, 1)
        worker.produce(topic, topic)
    worker.add_connector("sink", RecordingSink, {"topics.regex": "orders.*"})
    worker.run_until(lambda: len(RECEIVED.get("sink", [])) == 2, DEADLINE_MS, "two records")
    worker.advance(1000)
    assert sorted(record.topic for record in RECEIVED["sink"]) == ["orders", "orders-eu"]


SINK = {"connector.class": "monitorable-sink", "name": "s"}
BOTH = "topics and topics.regex are mutually exclusive options, but both are set."
NEITHER = "Must configure one of topics or topics.regex"


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"topics": "a", "topics.regex": "a.*"}, {"topics": [BOTH], "topics.regex": [BOTH]}),
        ({}, {"topics": [NEITHER], "topics.regex": [NEITHER]}),
        ({"topics": " ", "topics.regex": ""}, {"topics": [NEITHER], "topics.regex": [NEITHER]}),
        ({"topics.regex": "a("}, None),
        (
            {"topics": "a,dlq", "errors.deadletterqueue.topic.name": "dlq"},
            {
                "topics": [
                    "The DLQ topic 'dlq' may not be included in the list of topics ('topics=['a', 'dlq']') consumed "
                    "by the connector"
                ]
            },
        ),
        (
            {"topics.regex": "d.*", "errors.deadletterqueue.topic.name": "dlq"},
            {
                "topics.regex": [
                    "The DLQ topic 'dlq' may not be matched by the regex for the topics ('topics.regex=d.*') consumed "
                    "by the connector"
                ]
            },
        ),
        ({"topics.regex": "a.*"}, {}),
        ({"topics": "a"}, {}),
    ],
)
def test_validate_says_what_is_wrong_with_how_a_sink_names_its_topics(
    props: dict[str, Any], expected: dict[str, list[str]] | None
) -> None:
    infos = validate_connector_config({**SINK, **props})
    found = {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"] if info["value"]["errors"]}
    if expected is None:
        assert list(found) == ["topics.regex"] and "Invalid regular expression" in found["topics.regex"][0]
        return
    assert found == expected
    if expected:
        with pytest.raises(InvalidConfigError):
            check_connector_config({**SINK, **props}, DEFAULT_WORKER_CONFIG)


def test_a_stored_config_with_both_fails_to_start_naming_the_problem(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    props = {"connector.class": "monitorable-sink", "name": "s", "topics": "a", "topics.regex": "a.*"}
    with pytest.raises(ConfigError, match="mutually exclusive"):
        worker.worker.validate(props)
