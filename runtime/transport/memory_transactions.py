"""Transactions on the in-memory broker: the transactional producer and what the broker keeps of its transactions.

Records of a transaction are stored at ``produce`` time, as Kafka stores them, and take their offsets. Ending a
transaction writes one marker per partition it wrote to (Kafka's control records): the marker takes an offset too,
and no consumer ever returns it, so a partition's offsets keep gaps as they do on Kafka. A ``read_committed``
consumer reads a partition only up to its first record of a transaction still open (Kafka's last stable offset) and
skips records of aborted transactions; a ``read_uncommitted`` one reads them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    Message,
    ProducerFencedError,
    RawHeaders,
    TransactionAbortableError,
)
from headwater.runtime.transport.memory_producer import MemoryProducer
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import TopicPartition

if TYPE_CHECKING:
    from headwater.runtime.transport.memory import MemoryBroker


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

    def init(self, broker: MemoryBroker, transactional_id: str) -> int:
        """A new producer for ``transactional_id``: abort what the older one left open; return the new epoch."""
        self.end(broker, transactional_id, commit=False)
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

    def end(self, broker: MemoryBroker, transactional_id: str, commit: bool) -> None:
        """Write the markers ending ``transactional_id``'s open transaction, if any; on abort, hide its records."""
        for tp, offsets in self.open.pop(transactional_id, {}).items():
            log = broker.log(tp)
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

    def hidden(self, tp: TopicPartition, committed_only: bool) -> set[int] | None:
        """The offsets of ``tp`` a consumer skips (``None``: none)."""
        markers = self.markers.get(tp)
        aborted = self.aborted.get(tp) if committed_only else None
        if aborted and markers:
            return markers | aborted
        return markers or aborted or None


class MemoryTransactionalProducer(MemoryProducer):
    """A :class:`~headwater.runtime.transport.base.TransactionalProducer` of a :class:`MemoryBroker`."""

    def __init__(self, broker: MemoryBroker, transactional_id: str, config: Mapping[str, Any]) -> None:
        super().__init__(broker, config)
        self._transactional_id = transactional_id
        self._epoch: int | None = None
        self._in_transaction = False
        self._failed = False

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    def init_transactions(self, timeout_ms: int) -> None:
        with self.broker.lock:
            if self._epoch is not None:
                raise ConnectError(f"transactions of {self._transactional_id!r} are initialised already")
            self._epoch = self.broker.transactions.init(self.broker, self._transactional_id)

    def begin(self) -> None:
        with self.broker.lock:
            self._check()
            if self._in_transaction:
                raise ConnectError(f"a transaction of {self._transactional_id!r} is open already")
            self._in_transaction, self._failed = True, False

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: RawHeaders | None = None,
        on_delivery: DeliveryCallback | None = None,
        ack: Acknowledgement | None = None,
    ) -> None:
        with self.broker.lock:
            self._check()
            if not self._in_transaction:
                raise ConnectError(f"no transaction of {self._transactional_id!r} is open: begin one first")
            queued = len(self._pending)
            super().produce(topic, value, key, partition, timestamp, headers, on_delivery, ack)
            for entry in self._pending[queued:]:
                if entry[2] is not None:
                    self.broker.transactions.wrote(self._transactional_id, entry[2])
                else:
                    self._failed = True

    def commit(self, timeout_ms: int) -> None:
        """Deliver the transaction's acks, then commit it; raises :class:`RetriableError` when acks are held (as
        librdkafka's flush times out), :class:`TransactionAbortableError` when a record of it failed."""
        outstanding = self.flush(timeout_ms)
        with self.broker.lock:
            self._check()
            if not self._in_transaction:
                raise ConnectError(f"no transaction of {self._transactional_id!r} is open")
            if outstanding:
                raise RetriableError(
                    f"cannot commit the transaction of {self._transactional_id!r}: {outstanding} records are not "
                    "acknowledged yet; commit again"
                )
            if self._failed:
                raise TransactionAbortableError(
                    f"cannot commit the transaction of {self._transactional_id!r}: a record in it failed; abort it"
                )
            self.broker.transactions.end(self.broker, self._transactional_id, commit=True)
            self._in_transaction = False

    def abort(self, timeout_ms: int) -> None:
        self.flush(timeout_ms)
        with self.broker.lock:
            self._check()
            self.broker.transactions.end(self.broker, self._transactional_id, commit=False)
            self._in_transaction = False

    def _check(self) -> None:
        if self._epoch is None:
            raise ConnectError(f"call init_transactions of {self._transactional_id!r} first")
        self.broker.transactions.check(self._transactional_id, self._epoch)

    def __repr__(self) -> str:
        state = "open" if self._in_transaction else "idle"
        return f"MemoryTransactionalProducer({self._transactional_id!r}, epoch={self._epoch}, {state})"
