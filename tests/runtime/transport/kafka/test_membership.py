"""The Kafka transport's group member on a real broker: a slot topic the broker does not list yet when the member
subscribes to it (just created, on a loaded broker) is handed out within seconds once listed, not at librdkafka's
default metadata refresh, 5 minutes later."""

from __future__ import annotations

import time
from collections.abc import Collection

import pytest

from headwater.runtime.transport.base import MissingTopicError, NewTopic
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.sdk.records import TopicPartition

pytestmark = pytest.mark.kafka

DEADLINE_S = 60.0
"""Generous for a loaded machine; the default refresh would take 300 s."""


class Owned(set[TopicPartition]):
    """The partitions a member owns, kept by its rebalance callbacks."""

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        self.update(partitions)

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        self.difference_update(partitions)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self.difference_update(partitions)


def test_a_subscribed_topic_listed_late_is_assigned_within_seconds(kafka_bootstrap: str, unique_name: str) -> None:
    transport = KafkaTransport(kafka_bootstrap, {})  # librdkafka's default metadata refresh, as a worker's clients
    admin = transport.admin()
    first, late = f"{unique_name}-first", f"{unique_name}-late"
    admin.create_topics([NewTopic(first, 1, 1)])
    owned = Owned()
    member = transport.group_member(f"{unique_name}-group", {"session.timeout.ms": 10_000}, owned)

    def poll_until(missing: bool = False) -> bool:
        """Poll until ``owned`` covers both topics (with ``missing``, until a missing topic is reported)."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                member.poll(50)
            except MissingTopicError:
                if missing:
                    return True
            if not missing and owned == {TopicPartition(first, 0), TopicPartition(late, 0)}:
                return True
        return False

    try:
        member.subscribe([first])
        deadline = time.monotonic() + DEADLINE_S
        while not owned and time.monotonic() < deadline:
            member.poll(50)
        assert owned == {TopicPartition(first, 0)}

        member.subscribe([first, late])  # as if the broker did not list it yet
        assert poll_until(missing=True), f"{late} was never reported missing"
        admin.create_topics([NewTopic(late, 1, 1)])
        assert poll_until(), f"{late} was not assigned within {DEADLINE_S} s of its creation: {sorted(owned)}"
    finally:
        member.close()
