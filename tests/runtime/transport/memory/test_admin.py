"""The in-memory broker's admin client: topics created, listed and deleted as a Kafka controller does."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.memory import MemoryBroker, MemoryProducer, MemoryTransport
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition

TP = TopicPartition


def test_topic_administration() -> None:
    broker = MemoryBroker()
    admin = MemoryTransport(broker).admin()
    admin.create_topics([NewTopic("a", 2), NewTopic("b", 1, config={"retention.ms": "1"})])
    admin.create_topics([NewTopic("a", 5)])
    assert admin.list_topics() == {"a": 2, "b": 1}
    assert broker.topic_config("b") == {"retention.ms": "1"}
    MemoryProducer(broker.state, {}).produce("a", b"v", partition=1)
    assert broker.end_offset(TP("a", 1)) == 1
    assert "a: [0, 1]" in repr(broker)
    with pytest.raises(ConnectError, match="Unknown topics"):
        admin.delete_topics(["a", "zzz"])
    admin.delete_topics(["a"])
    assert admin.list_topics() == {"b": 1}
    with pytest.raises(ConnectError, match="Unknown topic a"):
        broker.messages("a")


def test_the_admin_creates_topics_as_a_kafka_controller_does() -> None:
    broker = MemoryBroker(default_partitions=2, brokers=1)
    admin = MemoryTransport(broker).admin()
    admin.create_topics([NewTopic("defaults", -1, -1)])
    assert broker.topics()["defaults"] == 2, "-1 partitions: the broker's default"
    refusals = [
        (NewTopic("rf", 1, 2), "The target replication factor of 2 cannot be reached because only 1 broker(s)"),
        (NewTopic("rf0", 1, 0), "Replication factor must be larger than 0, or -1 to use the default value."),
        (NewTopic("p0", 0, 1), "Number of partitions was set to an invalid non-positive value."),
        (NewTopic("cfg", 1, 1, {"no.such": "x"}), "Unknown topic config name: no.such"),
        (NewTopic("pol", 1, 1, {"cleanup.policy": "keep"}), "Invalid value keep for configuration cleanup.policy"),
    ]
    for topic, reason in refusals:
        with pytest.raises(ConnectError) as refused:
            admin.create_topics([topic])
        assert str(refused.value).startswith(f"cannot create topic {topic.name}: ") and reason in str(refused.value)
        assert topic.name not in broker.topics()
    assert admin.describe_topics(["defaults", "rf", "missing"]) == {"defaults": 2}
