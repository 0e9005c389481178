"""An in-process broker and its clients, for deterministic tests and the embedded demo.

Nothing here waits on real time: timeouts given to ``poll``/``flush`` are ignored and calls return what is available
now. One re-entrant lock on the broker guards all state, so clients may be used from several threads. Callbacks
(delivery, commit, rebalance) run on the calling thread, outside that lock. Consumer groups live in
:mod:`headwater.runtime.transport.memory_group`, the producer in :mod:`headwater.runtime.transport.memory_producer`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.transport.base import (
    LogApply,
    Message,
    NewTopic,
    RebalanceListener,
)
from headwater.runtime.transport.memory_group import ConsumerGroup, MemoryConsumer
from headwater.runtime.transport.memory_log import MemoryLog
from headwater.runtime.transport.memory_membership import MemoryGroupMember
from headwater.runtime.transport.memory_producer import MemoryProducer, ProducerFaults, key_partition, murmur2
from headwater.runtime.transport.memory_transactions import MemoryTransactionalProducer, Transactions
from headwater.runtime.transport.refusals import BROKER_MAX_MESSAGE_BYTES, NON_EMPTY_GROUP, compacted, topic_refusal
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition

__all__ = [
    "MemoryAdmin",
    "MemoryBroker",
    "MemoryConsumer",
    "MemoryProducer",
    "MemoryTransactionalProducer",
    "MemoryTransport",
    "ProducerFaults",
    "key_partition",
    "murmur2",
]

log = logging.getLogger(__name__)


class MemoryBroker:
    """An in-process cluster: topics of partition logs, consumer groups and broker-wide producer faults.

    Offsets are list indexes. Compacted topics keep every record; :meth:`compacted` is the compacted view. It
    refuses what a Kafka broker refuses where a connector can get it wrong (see
    :mod:`~headwater.runtime.transport.refusals`): a record without a key on a compacted topic, a record over its
    topic's ``max.message.bytes`` (the broker's ``message_max_bytes`` when the topic sets none), and, when
    ``auto_create_topics`` is false, a record to a topic that does not exist. Its admin clients create topics as a
    cluster of ``brokers`` brokers does (3 by default, so that Kafka Connect's default replication factor of 3 fits),
    refusing what Kafka's controller refuses (:func:`~headwater.runtime.transport.refusals.topic_refusal`).
    """

    def __init__(
        self,
        default_partitions: int = 1,
        auto_create_topics: bool = True,
        message_max_bytes: int = BROKER_MAX_MESSAGE_BYTES,
        brokers: int = 3,
    ) -> None:
        self.lock = threading.RLock()
        self.brokers = brokers
        """How many brokers the cluster has: the largest replication factor a topic may have."""
        self.default_partitions = default_partitions
        self.auto_create_topics = auto_create_topics
        """Whether a record to a topic that does not exist creates it (Kafka's ``auto.create.topics.enable``)."""
        self.message_max_bytes = message_max_bytes
        """The largest record batch a topic without ``max.message.bytes`` takes (Kafka's ``message.max.bytes``)."""
        self.faults = ProducerFaults()
        self.metadata_version = 0
        """Bumped whenever a topic or partition is created or deleted; consumer groups re-check it on each poll."""
        self._logs: dict[str, list[list[Message]]] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self.rules: dict[str, tuple[bool, int]] = {}
        """Topic name -> (compacted, ``max.message.bytes``): what its records are checked against."""
        self._groups: dict[str, ConsumerGroup] = {}
        self._producers: weakref.WeakSet[MemoryProducer] = weakref.WeakSet()
        self.transactions = Transactions()
        """Transactional producers' epochs and what their transactions wrote (see
        :mod:`~headwater.runtime.transport.memory_transactions`)."""

    # -- topics --------------------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """Create ``name`` unless it exists; an existing topic keeps its partitions and config."""
        if partitions < 1:
            raise ConnectError(f"Topic {name} needs at least one partition, got {partitions}")
        with self.lock:
            if name in self._logs:
                return
            self._logs[name] = [[] for _ in range(partitions)]
            self._configs[name] = settings = dict(config or {})
            limit = int(settings.get("max.message.bytes", self.message_max_bytes))
            self.rules[name] = (compacted(settings), limit)
            self.metadata_version += 1

    def create_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions, like Kafka's ``createPartitions``."""
        with self.lock:
            logs = self._topic_logs(name)
            if total < len(logs):
                raise ConnectError(f"Topic {name} has {len(logs)} partitions, cannot shrink to {total}")
            if total > len(logs):
                logs.extend([] for _ in range(total - len(logs)))
                self.metadata_version += 1

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its records; consumers that own its partitions are revoked at their next poll."""
        with self.lock:
            self._topic_logs(name)
            del self._logs[name]
            del self._configs[name]
            del self.rules[name]
            self.metadata_version += 1

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count, in creation order."""
        with self.lock:
            return {name: len(logs) for name, logs in self._logs.items()}

    def topic_config(self, topic: str) -> dict[str, str]:
        with self.lock:
            self._topic_logs(topic)
            return dict(self._configs[topic])

    def messages(self, topic: str, partition: int | None = None, committed_only: bool = False) -> list[Message]:
        """The records of one partition, or of all partitions concatenated in partition order, without the markers
        ending transactions: as a ``read_uncommitted`` consumer reads them (with those of open and aborted
        transactions), or, ``committed_only``, as a ``read_committed`` one does."""
        with self.lock:
            logs = self._topic_logs(topic)
            chosen = range(len(logs)) if partition is None else [partition]
            found: list[Message] = []
            for index in chosen:
                tp = TopicPartition(topic, index)
                log = self._partition_log(tp)
                end = self.transactions.stable_end(tp, len(log)) if committed_only else len(log)
                hidden = self.transactions.hidden(tp, committed_only)
                if hidden is None:
                    found.extend(log if end == len(log) else log[:end])
                else:
                    found.extend(message for message in log[:end] if message.offset not in hidden)
            return found

    def end_offset(self, tp: TopicPartition) -> int:
        """The offset the next record of ``tp`` will get."""
        with self.lock:
            return len(self._partition_log(tp))

    def compacted(self, topic: str) -> dict[bytes | None, Message]:
        """The latest committed record per key, as log compaction would leave it; a tombstone (``None`` value) drops
        the key."""
        view: dict[bytes | None, Message] = {}
        for message in self.messages(topic, committed_only=True):
            view.pop(message.key, None)
            if message.value is not None:
                view[message.key] = message
        return view

    def log(self, tp: TopicPartition) -> list[Message] | None:
        """The live log of ``tp`` (not a copy), or ``None`` when it does not exist. Call under :attr:`lock`."""
        logs = self._logs.get(tp.topic)
        if logs is None or not 0 <= tp.partition < len(logs):
            return None
        return logs[tp.partition]

    def _topic_logs(self, name: str) -> list[list[Message]]:
        logs = self._logs.get(name)
        if logs is None:
            raise ConnectError(f"Unknown topic {name}")
        return logs

    def _partition_log(self, tp: TopicPartition) -> list[Message]:
        log = self.log(tp)
        if log is None:
            raise ConnectError(f"Unknown topic-partition {tp}")
        return log

    # -- producer faults, broker-wide ----------------------------------------------------------------------------

    def hold_acks(self, topic: str | None = None) -> None:
        """Hold acks of every producer for ``topic`` (all topics when ``None``); see :class:`ProducerFaults`."""
        with self.lock:
            self.faults.hold_acks(topic)

    def release_acks(self, topic: str | None = None) -> None:
        with self.lock:
            self.faults.release_acks(topic)

    def held_acks(self) -> int:
        """How many acks are held, over all open producers."""
        with self.lock:
            return sum(producer.held_acks() for producer in self._producers)

    def fail_next_sends(self, n: int, retriable: bool = True) -> None:
        """The next ``n`` ``produce`` calls of any producer raise; see :meth:`ProducerFaults.fail_next_sends`."""
        with self.lock:
            self.faults.fail_next_sends(n, retriable)

    def fail_next_deliveries(self, n: int, error: Exception | None = None) -> None:
        """The next ``n`` records of any producer fail; see :meth:`ProducerFaults.fail_next_deliveries`."""
        with self.lock:
            self.faults.fail_next_deliveries(n, error)

    def register_producer(self, producer: MemoryProducer) -> None:
        with self.lock:
            self._producers.add(producer)

    def unregister_producer(self, producer: MemoryProducer) -> None:
        with self.lock:
            self._producers.discard(producer)

    # -- consumer groups -----------------------------------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The coordinator state of ``group_id``, created on first use."""
        with self.lock:
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = ConsumerGroup(group_id, self)
            return group

    def group_members(self, group_id: str) -> list[str]:
        """Member ids of ``group_id``, in join order."""
        with self.lock:
            return self.consumer_group(group_id).member_ids()

    def group_assignment(self, group_id: str) -> dict[str, frozenset[TopicPartition]]:
        """Member id -> the partitions that member owns now (after the callbacks it has run)."""
        with self.lock:
            return self.consumer_group(group_id).assignment()

    def group_target(self, group_id: str) -> dict[str, frozenset[TopicPartition]]:
        """Member id -> the partitions the group wants it to own once every member has polled."""
        with self.lock:
            return self.consumer_group(group_id).target()

    def expel_member(self, group_id: str, member_id: str) -> None:
        """Simulate a session timeout: drop the member now; it calls ``on_partitions_lost`` at its next poll."""
        with self.lock:
            self.consumer_group(group_id).expel(member_id)

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """The committed offsets of ``group_id``."""
        with self.lock:
            return dict(self.consumer_group(group_id).committed)

    def commit_count(self, group_id: str) -> int:
        """How many commits of ``group_id`` succeeded."""
        with self.lock:
            return self.consumer_group(group_id).commit_count

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for the group, as an admin client does (Kafka accepts it with members too)."""
        with self.lock:
            self.consumer_group(group_id).committed.update(offsets)

    def delete_group(self, group_id: str) -> None:
        """Forget a group and its committed offsets; refused, as Kafka refuses it, while the group has members."""
        with self.lock:
            group = self._groups.get(group_id)
            if group is not None and group.members:
                raise ConnectError(NON_EMPTY_GROUP)
            self._groups.pop(group_id, None)

    def fail_next_commits(self, group_id: str, n: int, error: Exception | None = None) -> None:
        """The next ``n`` commits of ``group_id`` fail with ``error`` (a :class:`ConnectError` when ``None``)."""
        with self.lock:
            self.consumer_group(group_id).fail_next_commits(n, error)

    def __repr__(self) -> str:
        with self.lock:
            topics = ", ".join(f"{name}: {[len(log) for log in logs]}" for name, logs in self._logs.items())
            groups = ", ".join(f"{gid}: {len(group.members)} members" for gid, group in self._groups.items())
            return f"MemoryBroker(topics={{{topics}}}, groups={{{groups}}})"


class MemoryAdmin:
    """Topic administration on a :class:`MemoryBroker`."""

    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker

    def create_topics(self, topics: Sequence[NewTopic]) -> None:
        """Create the topics that do not exist yet (-1 partitions: the broker's ``default_partitions``); existing
        ones are left as they are. Raises :class:`ConnectError` with Kafka's words for a topic a Kafka broker
        refuses, after creating those before it, as each topic of a CreateTopics request succeeds or fails alone."""
        existing = self.broker.topics()
        for topic in topics:
            if topic.name in existing:
                continue
            refusal = topic_refusal(topic.partitions, topic.replication_factor, topic.config, self.broker.brokers)
            if refusal is not None:
                raise ConnectError(f"cannot create topic {topic.name}: {refusal}")
            partitions = self.broker.default_partitions if topic.partitions == -1 else topic.partitions
            self.broker.create_topic(topic.name, partitions, topic.config)

    def list_topics(self) -> dict[str, int]:
        return self.broker.topics()

    def describe_topics(self, names: Sequence[str]) -> dict[str, int]:
        topics = self.broker.topics()
        return {name: topics[name] for name in names if name in topics}

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        return self.broker.committed(group_id)

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        self.broker.alter_group_offsets(group_id, offsets)

    def delete_group(self, group_id: str) -> None:
        self.broker.delete_group(group_id)

    def delete_topics(self, names: Sequence[str], wait: bool = True) -> None:
        """Delete the named topics; raises :class:`ConnectError`, deleting none, if one does not exist (with
        ``wait`` false: deletes those that exist, logging the others)."""
        with self.broker.lock:
            missing = [name for name in names if name not in self.broker.topics()]
            if missing and wait:
                raise ConnectError(f"Unknown topics {missing}")
            if missing:
                log.info("topics %s were not deleted: they do not exist", missing)
            for name in names:
                if name not in missing:
                    self.broker.delete_topic(name)


class MemoryTransport:
    """Makes clients of one :class:`MemoryBroker` (a fresh one when none is given)."""

    def __init__(self, broker: MemoryBroker | None = None) -> None:
        self.broker = broker if broker is not None else MemoryBroker()

    def producer(self, config: Mapping[str, Any]) -> MemoryProducer:
        """A producer; ``config["clock"]``, when given, stamps records produced without a timestamp."""
        return MemoryProducer(self.broker, config)

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> MemoryTransactionalProducer:
        """See :meth:`Transport.transactional_producer`."""
        return MemoryTransactionalProducer(self.broker, transactional_id, config)

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> MemoryConsumer:
        """A consumer; ``config["auto.offset.reset"]`` is ``"earliest"`` (the default) or ``"latest"``,
        ``config["isolation.level"]`` ``"read_committed"`` (the default) or ``"read_uncommitted"``."""
        return MemoryConsumer(self.broker, group_id, config)

    def admin(self) -> MemoryAdmin:
        return MemoryAdmin(self.broker)

    def topic_log(self, topic: str, apply: LogApply, **options: Any) -> MemoryLog:
        """See :meth:`Transport.topic_log`."""
        return MemoryLog(self.broker, topic, apply, **options)

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> MemoryGroupMember:
        """See :meth:`Transport.group_member`; ``config`` is not used (the in-memory group has no clock)."""
        return MemoryGroupMember(self.broker, group_id, listener)
