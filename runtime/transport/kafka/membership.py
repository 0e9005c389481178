"""The Kafka transport's :class:`~headwater.runtime.transport.base.GroupMember`: a confluent-kafka consumer that
joins a group with cooperative-sticky assignment and never fetches (every assigned partition is paused), so Kafka's
group coordinator hands out partitions that stand for something else (a distributed worker's slots).

A slot topic is created a moment before the member subscribes to it, and the broker may not list it yet when the
consumer first asks: librdkafka then reports the topic missing and looks again only at its next metadata refresh,
``topic.metadata.refresh.interval.ms``, 5 minutes by default, so the slots would wait that long to be handed out.
The member looks every :data:`SLOT_METADATA_REFRESH_MS` instead: a metadata request for the subscribed topics only."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from headwater.runtime.transport.base import MissingTopicError, RebalanceListener
from headwater.runtime.transport.kafka.logger import LibrdkafkaLogger
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition as OurTopicPartition

log = logging.getLogger(__name__)

SLOT_METADATA_REFRESH_MS = 1000
"""How often a member asks the cluster for its subscribed topics, whatever the worker's clients are set to."""

_MISSING_TOPIC = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


class KafkaGroupMember:
    """A member of ``group_id``; ``config`` holds librdkafka settings (``bootstrap.servers``, security,
    ``session.timeout.ms``, ...)."""

    def __init__(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> None:
        self.group_id = group_id
        self._listener = listener
        self._consumer = Consumer(
            {
                **config,
                "group.id": group_id,
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "topic.metadata.refresh.interval.ms": SLOT_METADATA_REFRESH_MS,
                "logger": LibrdkafkaLogger(),
            }
        )
        self._closed = False

    def subscribe(self, topics: Sequence[str]) -> None:
        if topics:
            self._consumer.subscribe(sorted(topics), on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lose)
        else:
            self._consumer.unsubscribe()

    def poll(self, timeout_ms: int) -> None:
        message = self._consumer.poll(timeout_ms / 1000)
        error = None if message is None else message.error()
        if error is None:
            return
        if error.code() in _MISSING_TOPIC:
            raise MissingTopicError(f"group {self.group_id}: {error.str()}")
        if error.fatal():
            raise ConnectError(f"group {self.group_id}: {error.str()}")
        log.warning("group %s: %s", self.group_id, error.str())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._consumer.close()

    # ---- rebalance callbacks (inside poll and close) ---------------------------------------------------------

    def _assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_assign(partitions)
        if partitions:
            consumer.pause(partitions)  # nothing to fetch
            self._call(self._listener.on_partitions_assigned, _ours(partitions))

    def _revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            if partitions:
                self._call(self._listener.on_partitions_revoked, _ours(partitions))
        finally:
            consumer.incremental_unassign(partitions)

    def _lose(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            if partitions:
                self._call(self._listener.on_partitions_lost, _ours(partitions))
        finally:
            consumer.incremental_unassign(partitions)

    def _call(self, callback: Callable[[list[OurTopicPartition]], None], partitions: list[OurTopicPartition]) -> None:
        """Run a listener callback; what it raises is logged (it would surface from an unrelated poll)."""
        try:
            callback(partitions)
        except Exception:
            log.exception("group %s: handling a rebalance failed", self.group_id)

    def __repr__(self) -> str:
        return f"KafkaGroupMember({self.group_id!r})"


def _ours(partitions: list[TopicPartition]) -> list[OurTopicPartition]:
    return [OurTopicPartition(p.topic, p.partition) for p in partitions]
