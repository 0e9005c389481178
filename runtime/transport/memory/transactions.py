"""The in-memory broker's transactional producer. What the broker keeps of transactions (epochs, open
transactions, markers, aborted records) and how consumers read around them is in
:mod:`~headwater.runtime.transport.memory.state`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    RawHeaders,
    TransactionAbortableError,
)
from headwater.runtime.transport.memory.producer import MemoryProducer
from headwater.runtime.transport.memory.state import BrokerState
from headwater.sdk.errors import ConnectError, RetriableError


class MemoryTransactionalProducer(MemoryProducer):
    """A :class:`~headwater.runtime.transport.base.TransactionalProducer` of the in-memory broker whose ``state`` it
    takes."""

    def __init__(self, state: BrokerState, transactional_id: str, config: Mapping[str, Any]) -> None:
        super().__init__(state, config)
        self._transactional_id = transactional_id
        self._epoch: int | None = None
        self._in_transaction = False
        self._failed = False

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    def init_transactions(self, timeout_ms: int) -> None:
        with self.state.lock:
            if self._epoch is not None:
                raise ConnectError(f"transactions of {self._transactional_id!r} are initialised already")
            self._epoch = self.state.transactions.init(self.state, self._transactional_id)

    def begin(self) -> None:
        with self.state.lock:
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
        with self.state.lock:
            self._check()
            if not self._in_transaction:
                raise ConnectError(f"no transaction of {self._transactional_id!r} is open: begin one first")
            queued = len(self._pending)
            super().produce(topic, value, key, partition, timestamp, headers, on_delivery, ack)
            for entry in self._pending[queued:]:
                if entry[2] is not None:
                    self.state.transactions.wrote(self._transactional_id, entry[2])
                else:
                    self._failed = True

    def commit(self, timeout_ms: int) -> None:
        """Deliver the transaction's acks, then commit it; raises :class:`RetriableError` when acks are held (as
        librdkafka's flush times out), :class:`TransactionAbortableError` when a record of it failed."""
        outstanding = self.flush(timeout_ms)
        with self.state.lock:
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
            self.state.transactions.end(self.state, self._transactional_id, commit=True)
            self._in_transaction = False

    def abort(self, timeout_ms: int) -> None:
        self.flush(timeout_ms)
        with self.state.lock:
            self._check()
            self.state.transactions.end(self.state, self._transactional_id, commit=False)
            self._in_transaction = False

    def _check(self) -> None:
        if self._epoch is None:
            raise ConnectError(f"call init_transactions of {self._transactional_id!r} first")
        self.state.transactions.check(self._transactional_id, self._epoch)

    def __repr__(self) -> str:
        state = "open" if self._in_transaction else "idle"
        return f"MemoryTransactionalProducer({self._transactional_id!r}, epoch={self._epoch}, {state})"
