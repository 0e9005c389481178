"""The in-memory transport: :class:`MemoryTransport` makes the clients of one in-memory broker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transport.base import LogApply, RebalanceListener
from headwater.runtime.transport.memory.admin import MemoryAdmin
from headwater.runtime.transport.memory.broker import MemoryBroker
from headwater.runtime.transport.memory.consumer import MemoryConsumer
from headwater.runtime.transport.memory.log import MemoryLog
from headwater.runtime.transport.memory.membership import MemoryGroupMember
from headwater.runtime.transport.memory.producer import MemoryProducer
from headwater.runtime.transport.memory.transactions import MemoryTransactionalProducer


class MemoryTransport:
    """Makes clients of one :class:`MemoryBroker` (a fresh one when none is given)."""

    def __init__(self, broker: MemoryBroker | None = None) -> None:
        self.broker = broker if broker is not None else MemoryBroker()

    def producer(self, config: Mapping[str, Any]) -> MemoryProducer:
        """A producer; ``config["clock"]``, when given, stamps records produced without a timestamp."""
        return MemoryProducer(self.broker.state, config)

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> MemoryTransactionalProducer:
        """See :meth:`Transport.transactional_producer`."""
        return MemoryTransactionalProducer(self.broker.state, transactional_id, config)

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> MemoryConsumer:
        """A consumer; ``config["auto.offset.reset"]`` is ``"earliest"`` (the default) or ``"latest"``,
        ``config["isolation.level"]`` ``"read_committed"`` (the default) or ``"read_uncommitted"``."""
        return MemoryConsumer(self.broker.state, group_id, config)

    def admin(self) -> MemoryAdmin:
        return MemoryAdmin(self.broker.state)

    def topic_log(self, topic: str, apply: LogApply, **options: Any) -> MemoryLog:
        """See :meth:`Transport.topic_log`."""
        return MemoryLog(self.broker.state, topic, apply, **options)

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> MemoryGroupMember:
        """See :meth:`Transport.group_member`; ``config`` is not used (the in-memory group has no clock)."""
        return MemoryGroupMember(self.broker.state, group_id, listener)
