"""Admin requests on the in-memory broker: topics created as a Kafka controller creates them (and refuses what it
refuses), and consumer groups' committed offsets."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.memory.state import BrokerState
from headwater.runtime.transport.refusals import topic_refusal
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition

log = logging.getLogger(__name__)


class MemoryAdmin:
    """Topic and group administration on the in-memory broker whose ``state`` it takes."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state

    def create_topics(self, topics: Sequence[NewTopic]) -> None:
        """Create the topics that do not exist yet (-1 partitions: the broker's ``default_partitions``); existing
        ones are left as they are. Raises :class:`ConnectError` with Kafka's words for a topic a Kafka broker
        refuses, after creating those before it, as each topic of a CreateTopics request succeeds or fails alone."""
        existing = self.state.topics()
        for topic in topics:
            if topic.name in existing:
                continue
            refusal = topic_refusal(topic.partitions, topic.replication_factor, topic.config, self.state.brokers)
            if refusal is not None:
                raise ConnectError(f"cannot create topic {topic.name}: {refusal}")
            partitions = self.state.default_partitions if topic.partitions == -1 else topic.partitions
            self.state.create_topic(topic.name, partitions, topic.config)

    def list_topics(self) -> dict[str, int]:
        return self.state.topics()

    def describe_topics(self, names: Sequence[str]) -> dict[str, int]:
        topics = self.state.topics()
        return {name: topics[name] for name in names if name in topics}

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        with self.state.lock:
            return dict(self.state.consumer_group(group_id).committed)

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for the group (Kafka accepts it with members too)."""
        with self.state.lock:
            self.state.consumer_group(group_id).committed.update(offsets)

    def delete_group(self, group_id: str) -> None:
        self.state.delete_group(group_id)

    def delete_topics(self, names: Sequence[str], wait: bool = True) -> None:
        """Delete the named topics; raises :class:`ConnectError`, deleting none, if one does not exist (with
        ``wait`` false: deletes those that exist, logging the others)."""
        with self.state.lock:
            missing = [name for name in names if name not in self.state.topics()]
            if missing and wait:
                raise ConnectError(f"Unknown topics {missing}")
            if missing:
                log.info("topics %s were not deleted: they do not exist", missing)
            for name in names:
                if name not in missing:
                    self.state.delete_topic(name)
