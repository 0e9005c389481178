"""Topic creation for source connectors (KIP-158), on the in-memory broker and on a real one: a source task creates
a topic it writes to for the first time with the settings of the first group the topic matches, once, before its
first record; a topic that exists is left as it is; a topic the cluster will not create fails the task, saying why."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.memory import MemoryAdmin, MemoryBroker
from headwater.sdk import SourceBatch, SourceConnector, SourceRecord, SourceTask
from headwater.sdk.errors import RetriableError

Make = Callable[..., SimulatedWorker]
CONFIG = {"offset.flush.interval.ms": 100}
DEADLINE_MS = 60_000


class TopicsTask(SourceTask):
    """Sends one record to each topic its ``topics`` config lists, once, then ``rounds`` more times."""

    def start(self, config: Mapping[str, str]) -> None:
        self.topics = config["topics"].split(",")
        self.rounds = int(config.get("rounds", "1"))
        self.sent = 0

    def poll(self) -> list[SourceRecord] | None:
        if self.sent >= self.rounds:
            return None
        self.sent += 1
        return [
            SourceRecord({"topic": topic}, {"n": self.sent}, topic, {"n": self.sent}, key=topic)
            for topic in self.topics
        ]


class TopicsSource(SourceConnector):
    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items() if value is not None}

    def task_class(self) -> type[SourceTask]:
        return TopicsTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


def written(worker: SimulatedWorker, *topics: str) -> Callable[[], bool]:
    return lambda: all(worker.messages(topic) for topic in topics)


def test_a_missing_topic_is_created_with_the_default_groups_partitions_and_configs(
    make_worker: Make, unique_name: str
) -> None:
    worker = make_worker(CONFIG)
    topic = f"{unique_name}-created"
    worker.add_connector(
        "src",
        TopicsSource,
        {
            "topics": topic,
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "3",
            "topic.creation.default.cleanup.policy": "compact",
            "topic.creation.default.retention.ms": "86400000",
        },
    )
    worker.run_until(written(worker, topic), DEADLINE_MS, "the record to the created topic")
    assert worker.partition_count(topic) == 3
    assert worker.transport.admin().describe_topics([topic, f"{topic}-not-there"]) == {topic: 3}
    config = worker.topic_config(topic)  # the cluster's answer to DescribeConfigs
    assert config["cleanup.policy"] == "compact"
    assert config["retention.ms"] == "86400000"
    assert worker.values(topic) == [{"n": 1}]
    assert worker.source_task("src").topic_creation is not None
    assert worker.source_task("src").topic_creation.created == [topic]


def test_each_topic_gets_the_settings_of_the_first_group_it_matches_the_default_group_last(
    make_worker: Make, unique_name: str
) -> None:
    worker = make_worker(CONFIG)
    compacted, wide, plain = f"{unique_name}-compacted-a", f"{unique_name}-wide-b", f"{unique_name}-plain"
    worker.add_connector(
        "src",
        TopicsSource,
        {
            "topics": f"{compacted},{wide},{plain}",
            "topic.creation.groups": "compacted,wide",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
            "topic.creation.compacted.include": f"{unique_name}-compacted-.*",
            "topic.creation.compacted.partitions": "2",
            "topic.creation.compacted.cleanup.policy": "compact",
            # matches every topic, but comes after compacted; excludes plain, which falls to the default group
            "topic.creation.wide.include": ".*",
            "topic.creation.wide.exclude": ".*-plain",
            "topic.creation.wide.partitions": "4",
        },
    )
    worker.run_until(written(worker, compacted, wide, plain), DEADLINE_MS, "a record in each topic")
    assert [worker.partition_count(t) for t in (compacted, wide, plain)] == [2, 4, 1]
    assert worker.topic_config(compacted)["cleanup.policy"] == "compact"
    assert worker.topic_config(wide).get("cleanup.policy", "delete") == "delete"


def test_a_topic_that_exists_is_left_as_it_is(make_worker: Make, unique_name: str) -> None:
    worker = make_worker(CONFIG)
    topic = f"{unique_name}-existing"
    worker.create_topic(topic, 1)
    worker.add_connector(
        "src",
        TopicsSource,
        {
            "topics": topic,
            "rounds": "3",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "3",
            "topic.creation.default.cleanup.policy": "compact",
        },
    )
    worker.run_until(lambda: len(worker.messages(topic)) == 3, DEADLINE_MS, "three records")
    assert worker.partition_count(topic) == 1
    assert worker.topic_config(topic).get("cleanup.policy", "delete") == "delete"
    creation = worker.source_task("src").topic_creation
    assert creation is not None and creation.created == [] and creation.known == {topic}


def test_a_topic_the_cluster_will_not_create_fails_the_task_naming_the_topic_the_group_and_why(
    make_worker: Make, unique_name: str
) -> None:
    worker = make_worker({**CONFIG, "errors.tolerance": "all"})
    topic = f"{unique_name}-refused"
    worker.add_connector(
        "src",
        TopicsSource,
        {
            "topics": topic,
            "errors.tolerance": "all",  # a topic that cannot be created fails the task all the same, as in Kafka
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.no.such.config": "x",
        },
    )
    worker.run_until(lambda: worker.task_state("src") is State.FAILED, DEADLINE_MS, "the task to fail")
    trace = worker.herder.task_status(TaskId("src", 0)).trace or ""
    assert f"cannot create topic {topic!r} with topic creation group 'default'" in trace
    assert "Unknown topic config name: no.such.config" in trace
    assert topic not in worker.broker.topics(), "no record went out: the broker did not create it on first use"


def test_a_replication_factor_over_the_number_of_brokers_is_refused(make_worker: Make, unique_name: str) -> None:
    worker = make_worker(CONFIG)
    topic = f"{unique_name}-replicated"
    worker.add_connector(
        "src",
        TopicsSource,
        {"topics": topic, "topic.creation.default.replication.factor": "7", "topic.creation.default.partitions": "1"},
    )
    worker.run_until(lambda: worker.task_state("src") is State.FAILED, DEADLINE_MS, "the task to fail")
    trace = worker.herder.task_status(TaskId("src", 0)).trace or ""
    assert "replication factor of 7 cannot be reached" in trace, trace


def test_without_topic_creation_keys_the_task_creates_nothing(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.add_connector("src", TopicsSource, {"topics": "plain"})
    worker.run_until(written(worker, "plain"), DEADLINE_MS, "the record")
    assert worker.source_task("src").topic_creation is None
    assert worker.partition_count("plain") == 1, "created by the broker on first use, with its defaults"


def test_a_describe_that_times_out_is_retried_before_the_record_is_sent(
    make_simulated_worker: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    describe = MemoryAdmin.describe_topics

    def slow_once(self: MemoryAdmin, names: list[str]) -> dict[str, int]:
        calls.append(list(names))
        if len(calls) == 1:
            raise RetriableError("cannot describe topic t: no answer from the cluster in 30 s")
        return describe(self, names)

    monkeypatch.setattr(MemoryAdmin, "describe_topics", slow_once)
    worker = make_simulated_worker(CONFIG)
    worker.add_connector(
        "src",
        TopicsSource,
        {"topics": "t", "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "2"},
    )
    worker.run_until(written(worker, "t"), DEADLINE_MS, "the record")
    assert calls == [["t"], ["t"]]
    assert worker.partition_count("t") == 2
    assert worker.task_state("src") is State.RUNNING
    assert worker.values("t") == [{"n": 1}]


def test_a_worker_with_topic_creation_disabled_refuses_the_keys_and_creates_no_topic_for_a_stored_config(
    make_simulated_worker: Make, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker({**CONFIG, "topic.creation.enable": False})
    props = {
        "connector.class": f"{TopicsSource.__module__}:{TopicsSource.__qualname__}",
        "name": "src",
        "topics": "t",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "3",
    }
    with pytest.raises(InvalidConfigError) as refused:
        worker.herder.put_connector_config("src", props)
    assert "topic.creation.default.partitions: this worker's topic.creation.enable is false" in str(refused.value)
    with caplog.at_level(logging.WARNING):  # a config stored before the worker turned it off still runs
        task = worker.worker.start_task(TaskId("src", 0), props, connector_config=props)
    assert isinstance(task, WorkerSourceTask) and task.topic_creation is None
    assert "topic.creation.enable is false: it creates no topic" in caplog.text


@pytest.mark.parametrize("tolerance", ["none", "all"])
def test_without_topic_creation_a_missing_topic_the_broker_does_not_create_fails_its_record_as_in_kafka(
    make_simulated_worker: Make, tolerance: str
) -> None:
    """Kafka Connect's producer fails the record's send (its callback gets the TimeoutException of a topic missing
    from the metadata): the task fails, or with errors.tolerance=all the record is skipped. Here librdkafka fails
    it with UNKNOWN_TOPIC_OR_PART, saying the topic is not created on first use."""
    worker = make_simulated_worker(CONFIG, broker=MemoryBroker(auto_create_topics=False))
    worker.add_connector("src", TopicsSource, {"topics": "missing", "rounds": "2", "errors.tolerance": tolerance})
    if tolerance == "none":
        worker.run_until(lambda: worker.task_state("src") is State.FAILED, DEADLINE_MS, "the task to fail")
        trace = worker.herder.task_status(TaskId("src", 0)).trace or ""
        assert "topic 'missing' does not exist, and it is not created on first use here" in trace
    else:
        counters = worker.source_task("src").errors.counters
        worker.run_until(lambda: counters.records_skipped == 2, DEADLINE_MS, "two skipped records")
        assert worker.task_state("src") is State.RUNNING
    assert "missing" not in worker.broker.topics()


def test_with_topic_creation_the_same_topic_is_created_first(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG, broker=MemoryBroker(auto_create_topics=False))
    worker.add_connector(
        "src",
        TopicsSource,
        {
            "topics": "missing",
            "topic.creation.default.replication.factor": "-1",
            "topic.creation.default.partitions": "-1",
        },
    )
    worker.run_until(written(worker, "missing"), DEADLINE_MS, "the record")
    assert worker.partition_count("missing") == 1, "-1: the broker's default number of partitions"


class BatchTask(SourceTask):
    """Hands over one :class:`SourceBatch` of raw bytes, which the loop sends as columns."""

    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topics"]
        self.sent = False

    def poll(self) -> list[SourceRecord] | None:
        if self.sent:
            return None
        self.sent = True
        return SourceBatch({"p": 0}, self.topic, [b"a", b"b"], [{"n": 1}, {"n": 2}], keys=[b"1", b"2"])


class BatchSource(TopicsSource):
    def task_class(self) -> type[SourceTask]:
        return BatchTask


def test_a_batch_sent_as_columns_creates_its_topic_first(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({**CONFIG, "key.converter": "bytes", "value.converter": "bytes"})
    worker.add_connector(
        "src",
        BatchSource,
        {"topics": "batch", "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "4"},
    )
    worker.run_until(lambda: len(worker.messages("batch")) == 2, DEADLINE_MS, "the batch")
    assert worker.partition_count("batch") == 4
