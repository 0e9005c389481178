"""The in-memory transport's :class:`~headwater.runtime.transport.base.GroupMember`: a
:class:`~headwater.runtime.transport.memory.consumer.MemoryConsumer` of the group that never fetches (every assigned
partition is paused). The in-memory group is cooperative and sticky like Kafka's with cooperative-sticky
assignment. It has no clock: a member that stops polling keeps its partitions until
:meth:`~headwater.runtime.transport.memory.broker.MemoryBroker.expel_member` plays the coordinator's session
timeout."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from headwater.runtime.transport.base import RebalanceListener
from headwater.runtime.transport.memory.consumer import MemoryConsumer
from headwater.runtime.transport.memory.state import BrokerState
from headwater.sdk.records import TopicPartition

log = logging.getLogger(__name__)


class MemoryGroupMember:
    """A member of ``group_id`` on the in-memory broker whose ``state`` it takes."""

    def __init__(self, state: BrokerState, group_id: str, listener: RebalanceListener) -> None:
        self.group_id = group_id
        self._listener = listener
        self._consumer = MemoryConsumer(state, group_id, {})
        self._owned: set[TopicPartition] = set()
        self._closed = False

    @property
    def member_id(self) -> str | None:
        """This member's id in the group (it changes when the member rejoins after it was expelled)."""
        return self._consumer.member_id

    def subscribe(self, topics: Sequence[str]) -> None:
        self._consumer.subscribe(list(topics), self)

    def poll(self, timeout_ms: int) -> None:
        if self._consumer.member_id is not None:
            self._consumer.poll(0, 0)

    def close(self) -> None:
        """Revoke what the member owns (as Kafka's consumer does when it leaves), then leave the group."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._owned:
                self.on_partitions_revoked(sorted(self._owned))
        finally:
            self._consumer.close()

    # ---- the consumer's rebalance listener -------------------------------------------------------------------

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        self._consumer.pause(partitions)  # nothing to fetch
        self._owned.update(partitions)
        self._call(self._listener.on_partitions_assigned, partitions)

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        self._owned.difference_update(partitions)
        self._call(self._listener.on_partitions_revoked, partitions)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self._owned.difference_update(partitions)
        self._call(self._listener.on_partitions_lost, partitions)

    def _call(self, callback: Callable[[list[TopicPartition]], None], partitions: Collection[TopicPartition]) -> None:
        try:
            callback(sorted(partitions))
        except Exception:
            log.exception("group %s: handling a rebalance failed", self.group_id)

    def __repr__(self) -> str:
        return f"MemoryGroupMember({self.group_id!r}, {self.member_id}, owns {sorted(self._owned)})"
