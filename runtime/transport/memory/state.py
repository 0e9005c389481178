"""What the parts of the in-memory broker share: the partition logs of its topics and the rules their records are
checked against, the transactions written into those logs, its consumer groups, its producers and their broker-wide
faults, all guarded by one re-entrant lock.

Producers, consumers, logs, group members and admin clients each take this :class:`BrokerState` rather than the
:class:`~headwater.runtime.transport.memory.broker.MemoryBroker` that holds it (which adds what tests use to look at
and steer the cluster), so none of them imports the broker.

Transactions follow Kafka's: their records are stored at ``produce`` time and take their offsets; ending a
transaction writes one marker per partition it wrote to (Kafka's control records), which takes an offset too and
which no consumer ever returns, so a partition's offsets keep gaps as they do on Kafka. A ``read_committed`` consumer
reads a partition only up to its first record of a transaction still open (Kafka's last stable offset) and skips
records of aborted transactions; a ``read_uncommitted`` one reads them all.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Protocol

from headwater.runtime.transport.base import Message, ProducerFencedError
from headwater.runtime.transport.memory.coordinator import ConsumerGroup
from headwater.runtime.transport.memory.faults import ProducerFaults
from headwater.runtime.transport.refusals import BROKER_MAX_MESSAGE_BYTES, NON_EMPTY_GROUP, compacted
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition


class AckHolder(Protocol):
    """A producer, as far as the broker's count of held acks goes."""

    def held_acks(self) -> int: ...


class BrokerState:
    """The topics, transactions, consumer groups and producers of one in-memory broker (see the module); every
    read and change happens under :attr:`lock`."""

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
        """Faults of every producer of the broker."""
        self.metadata_version = 0
        """Bumped whenever a topic or partition is created or deleted; consumer groups re-check it on each poll."""
        self.logs: dict[str, list[list[Message]]] = {}
        """Topic name -> its partitions' logs (a record's offset is its index)."""
        self.configs: dict[str, dict[str, str]] = {}
        self.rules: dict[str, tuple[bool, int]] = {}
        """Topic name -> (compacted, ``max.message.bytes``): what its records are checked against."""
        self.groups: dict[str, ConsumerGroup] = {}
        self.producers: weakref.WeakSet[AckHolder] = weakref.WeakSet()
        """The open producers, whose held acks the broker counts."""
        self.transactions = Transactions()
        """Transactional producers' epochs and what their transactions wrote."""

    # -- topics --------------------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """Create ``name`` unless it exists; an existing topic keeps its partitions and config."""
        if partitions < 1:
            raise ConnectError(f"Topic {name} needs at least one partition, got {partitions}")
        with self.lock:
            if name in self.logs:
                return
            self.logs[name] = [[] for _ in range(partitions)]
            self.configs[name] = settings = dict(config or {})
            limit = int(settings.get("max.message.bytes", self.message_max_bytes))
            self.rules[name] = (compacted(settings), limit)
            self.metadata_version += 1

    def create_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions, like Kafka's ``createPartitions``."""
        with self.lock:
            logs = self.topic_logs(name)
            if total < len(logs):
                raise ConnectError(f"Topic {name} has {len(logs)} partitions, cannot shrink to {total}")
            if total > len(logs):
                logs.extend([] for _ in range(total - len(logs)))
                self.metadata_version += 1

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its records; consumers that own its partitions are revoked at their next poll."""
        with self.lock:
            self.topic_logs(name)
            del self.logs[name]
            del self.configs[name]
            del self.rules[name]
            self.metadata_version += 1

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count, in creation order."""
        with self.lock:
            return {name: len(logs) for name, logs in self.logs.items()}

    def topic_config(self, topic: str) -> dict[str, str]:
        with self.lock:
            self.topic_logs(topic)
            return dict(self.configs[topic])

    def log(self, tp: TopicPartition) -> list[Message] | None:
        """The live log of ``tp`` (not a copy), or ``None`` when it does not exist. Call under :attr:`lock`."""
        logs = self.logs.get(tp.topic)
        if logs is None or not 0 <= tp.partition < len(logs):
            return None
        return logs[tp.partition]

    def topic_logs(self, name: str) -> list[list[Message]]:
        """The live logs of the partitions of ``name``; raises :class:`ConnectError` when it does not exist."""
        logs = self.logs.get(name)
        if logs is None:
            raise ConnectError(f"Unknown topic {name}")
        return logs

    def partition_log(self, tp: TopicPartition) -> list[Message]:
        """The live log of ``tp``; raises :class:`ConnectError` when it does not exist."""
        log = self.log(tp)
        if log is None:
            raise ConnectError(f"Unknown topic-partition {tp}")
        return log

    # -- consumer groups and producers ---------------------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The coordinator state of ``group_id``, created on first use."""
        with self.lock:
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = ConsumerGroup(group_id, self)
            return group

    def delete_group(self, group_id: str) -> None:
        """Forget a group and its committed offsets; refused, as Kafka refuses it, while the group has members."""
        with self.lock:
            group = self.groups.get(group_id)
            if group is not None and group.members:
                raise ConnectError(NON_EMPTY_GROUP)
            self.groups.pop(group_id, None)

    def register_producer(self, producer: AckHolder) -> None:
        with self.lock:
            self.producers.add(producer)

    def unregister_producer(self, producer: AckHolder) -> None:
        with self.lock:
            self.producers.discard(producer)


def fenced(transactional_id: str) -> str:
    """librdkafka's words for a call of a fenced producer."""
    return f"_FENCED: Local: This instance has been fenced by a newer instance (transactional.id {transactional_id!r})"


class Transactions:
    """The broker's transaction coordinator and the transaction state of its partitions; used under its lock."""

    def __init__(self) -> None:
        self.epochs: dict[str, int] = {}
        """Transactional id -> the epoch of its newest producer (Kafka's producer epoch)."""
        self.open: dict[str, dict[TopicPartition, list[int]]] = {}
        """Transactional id -> the offsets its open transaction wrote, per partition, in order."""
        self.aborted: dict[TopicPartition, set[int]] = {}
        """Offsets of records of aborted transactions, per partition."""
        self.markers: dict[TopicPartition, set[int]] = {}
        """Offsets of commit and abort markers, per partition."""

    def init(self, state: BrokerState, transactional_id: str) -> int:
        """A new producer for ``transactional_id``: abort what the older one left open; return the new epoch."""
        self.end(state, transactional_id, commit=False)
        epoch = self.epochs.get(transactional_id, -1) + 1
        self.epochs[transactional_id] = epoch
        return epoch

    def check(self, transactional_id: str, epoch: int) -> None:
        """Raise :class:`ProducerFencedError` when a newer producer has the id."""
        if self.epochs.get(transactional_id) != epoch:
            raise ProducerFencedError(fenced(transactional_id))

    def wrote(self, transactional_id: str, message: Message) -> None:
        """``transactional_id``'s open transaction stored ``message``."""
        tp = TopicPartition(message.topic, message.partition)
        self.open.setdefault(transactional_id, {}).setdefault(tp, []).append(message.offset)

    def end(self, state: BrokerState, transactional_id: str, commit: bool) -> None:
        """Write the markers ending ``transactional_id``'s open transaction, if any; on abort, hide its records."""
        for tp, offsets in self.open.pop(transactional_id, {}).items():
            log = state.log(tp)
            if log is None:  # the topic was deleted meanwhile
                continue
            if not commit:
                self.aborted.setdefault(tp, set()).update(offsets)
            marker = Message(tp.topic, tp.partition, len(log), None, None, None, ())
            log.append(marker)
            self.markers.setdefault(tp, set()).add(marker.offset)

    def stable_end(self, tp: TopicPartition, end: int) -> int:
        """The offset a ``read_committed`` consumer reads ``tp`` up to (not included): its first record of a
        transaction still open, else ``end`` (Kafka's last stable offset)."""
        return min((opened[tp][0] for opened in self.open.values() if tp in opened), default=end)

    def holding(self, tp: TopicPartition, end: int) -> tuple[str, int] | None:
        """The transactional id whose open transaction holds back a record of ``tp`` below ``end`` that is not its
        own (one committed, or written without a transaction, after it began), and that record's offset; ``None``
        when everything beyond the last stable offset belongs to open transactions, so a ``read_committed`` read to
        it holds every record committed so far."""
        firsts = [(opened[tp][0], tid) for tid, opened in self.open.items() if tp in opened]
        if not firsts:
            return None
        stable, holder = min(firsts)
        pending = {offset for opened in self.open.values() for offset in opened.get(tp, ())}
        skipped = self.markers.get(tp, set()) | self.aborted.get(tp, set())
        for offset in range(stable, end):
            if offset not in pending and offset not in skipped:
                return holder, offset
        return None

    def hidden(self, tp: TopicPartition, committed_only: bool) -> set[int] | None:
        """The offsets of ``tp`` a consumer skips (``None``: none)."""
        markers = self.markers.get(tp)
        aborted = self.aborted.get(tp) if committed_only else None
        if aborted and markers:
            return markers | aborted
        return markers or aborted or None
