"""The in-memory broker: a cluster of topics, consumer groups and producer faults in one process, with what tests
use to look at it and steer it (held acks, failing sends, deliveries and commits, expelled group members).

It holds a :class:`~headwater.runtime.transport.memory.state.BrokerState`, which the clients a
:class:`~headwater.runtime.transport.memory.transport.MemoryTransport` makes of it share.
"""

from __future__ import annotations

from collections.abc import Mapping

from headwater.runtime.transport.base import Message
from headwater.runtime.transport.memory.coordinator import ConsumerGroup
from headwater.runtime.transport.memory.state import BrokerState
from headwater.runtime.transport.refusals import BROKER_MAX_MESSAGE_BYTES
from headwater.sdk.records import TopicPartition


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
        self.state = BrokerState(default_partitions, auto_create_topics, message_max_bytes, brokers)
        """What the broker's clients share."""
        self.lock = self.state.lock
        """Guards all of the broker's state."""
        self.faults = self.state.faults
        """Faults of every producer of the broker (see :meth:`hold_acks`, :meth:`fail_next_sends`)."""

    # -- topics --------------------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """Create ``name`` unless it exists; an existing topic keeps its partitions and config."""
        self.state.create_topic(name, partitions, config)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions, like Kafka's ``createPartitions``."""
        self.state.create_partitions(name, total)

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its records; consumers that own its partitions are revoked at their next poll."""
        self.state.delete_topic(name)

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count, in creation order."""
        return self.state.topics()

    def topic_config(self, topic: str) -> dict[str, str]:
        return self.state.topic_config(topic)

    def messages(self, topic: str, partition: int | None = None, committed_only: bool = False) -> list[Message]:
        """The records of one partition, or of all partitions concatenated in partition order, without the markers
        ending transactions: as a ``read_uncommitted`` consumer reads them (with those of open and aborted
        transactions), or, ``committed_only``, as a ``read_committed`` one does."""
        state = self.state
        with state.lock:
            logs = state.topic_logs(topic)
            chosen = range(len(logs)) if partition is None else [partition]
            found: list[Message] = []
            for index in chosen:
                tp = TopicPartition(topic, index)
                log = state.partition_log(tp)
                end = state.transactions.stable_end(tp, len(log)) if committed_only else len(log)
                hidden = state.transactions.hidden(tp, committed_only)
                if hidden is None:
                    found.extend(log if end == len(log) else log[:end])
                else:
                    found.extend(message for message in log[:end] if message.offset not in hidden)
            return found

    def end_offset(self, tp: TopicPartition) -> int:
        """The offset the next record of ``tp`` will get."""
        with self.lock:
            return len(self.state.partition_log(tp))

    def compacted(self, topic: str) -> dict[bytes | None, Message]:
        """The latest committed record per key, as log compaction would leave it; a tombstone (``None`` value) drops
        the key."""
        view: dict[bytes | None, Message] = {}
        for message in self.messages(topic, committed_only=True):
            view.pop(message.key, None)
            if message.value is not None:
                view[message.key] = message
        return view

    # -- producer faults, broker-wide ----------------------------------------------------------------------------

    def hold_acks(self, topic: str | None = None) -> None:
        """Hold acks of every producer for ``topic`` (all topics when ``None``); see
        :class:`~headwater.runtime.transport.memory.faults.ProducerFaults`."""
        with self.lock:
            self.faults.hold_acks(topic)

    def release_acks(self, topic: str | None = None) -> None:
        with self.lock:
            self.faults.release_acks(topic)

    def held_acks(self) -> int:
        """How many acks are held, over all open producers."""
        with self.lock:
            return sum(producer.held_acks() for producer in self.state.producers)

    def fail_next_sends(self, n: int, retriable: bool = True) -> None:
        """The next ``n`` ``produce`` calls of any producer raise; see :meth:`ProducerFaults.fail_next_sends`."""
        with self.lock:
            self.faults.fail_next_sends(n, retriable)

    def fail_next_deliveries(self, n: int, error: Exception | None = None) -> None:
        """The next ``n`` records of any producer fail; see :meth:`ProducerFaults.fail_next_deliveries`."""
        with self.lock:
            self.faults.fail_next_deliveries(n, error)

    # -- consumer groups -----------------------------------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The coordinator state of ``group_id``, created on first use."""
        return self.state.consumer_group(group_id)

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
        self.state.delete_group(group_id)

    def fail_next_commits(self, group_id: str, n: int, error: Exception | None = None) -> None:
        """The next ``n`` commits of ``group_id`` fail with ``error`` (a :class:`ConnectError` when ``None``)."""
        with self.lock:
            self.consumer_group(group_id).fail_next_commits(n, error)

    def __repr__(self) -> str:
        with self.lock:
            topics = ", ".join(f"{name}: {[len(log) for log in logs]}" for name, logs in self.state.logs.items())
            groups = ", ".join(f"{gid}: {len(group.members)} members" for gid, group in self.state.groups.items())
            return f"MemoryBroker(topics={{{topics}}}, groups={{{groups}}})"
