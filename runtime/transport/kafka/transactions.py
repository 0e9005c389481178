"""The transactional producer on a real Kafka cluster: confluent-kafka's transactions API, its errors mapped as
confluent-kafka documents them (:func:`~headwater.runtime.transport.kafka.errors.transaction_error`); once fenced,
it refuses every further call.

Transactions that follow each other at once are paced: a transaction begins no sooner than
:data:`TRANSACTION_GAP_S` after the last one ended (see there)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import KafkaException

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    ProducerFencedError,
    RawHeaders,
)
from headwater.runtime.transport.kafka.errors import transaction_error
from headwater.runtime.transport.kafka.producer import KafkaProducer

_R = TypeVar("_R")

TRANSACTION_GAP_S = 0.001
"""How long after a commit or an abort returned the next transaction begins at the earliest. The transaction
coordinator answers ``commit_transaction`` once the decision is logged and writes the commit markers to the
transaction's partitions after that; an ``AddPartitionsToTxn`` for the next transaction that comes before they are
written is answered ``CONCURRENT_TRANSACTIONS``, which librdkafka (``rd_kafka_txn_handle_AddPartitionsToTxn``) and
Kafka's Java ``TransactionManager`` alike retry after a fixed 20 ms (KAFKA-5482), and the whole transaction waits.
KIP-890's transaction version 2 lets the coordinator take the next transaction's partitions in that state, but
librdkafka speaks only version 1 (``AddPartitionsToTxn`` v0). Waiting this long first avoids most of those retries;
see docs/exactly-once.md ("Throughput") for the measurements."""


class KafkaTransactionalProducer(KafkaProducer):
    """A :class:`~headwater.runtime.transport.base.TransactionalProducer` on a Kafka cluster; ``config`` carries
    its ``transactional.id``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._transactional_id = str(config["transactional.id"])
        self._fenced: ProducerFencedError | None = None
        self._ended_at = 0.0
        """``time.monotonic()`` when the last commit or abort returned."""

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    def init_transactions(self, timeout_ms: int) -> None:
        self._call(lambda: self._producer.init_transactions(timeout_ms / 1000), "cannot initialise transactions")

    def begin(self) -> None:
        wait = self._ended_at + TRANSACTION_GAP_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._call(self._producer.begin_transaction, "cannot begin a transaction")

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
        if self._fenced is not None:
            raise ProducerFencedError(str(self._fenced))
        super().produce(topic, value, key, partition, timestamp, headers, on_delivery, ack)

    def commit(self, timeout_ms: int) -> None:
        self._call(lambda: self._producer.commit_transaction(timeout_ms / 1000), "cannot commit the transaction")
        self._ended_at = time.monotonic()

    def abort(self, timeout_ms: int) -> None:
        self._call(lambda: self._producer.abort_transaction(timeout_ms / 1000), "cannot abort the transaction")
        self._ended_at = time.monotonic()

    def close(self) -> None:
        if self._fenced is None:
            super().close()

    def _call(self, call: Callable[[], _R], what: str) -> _R:
        if self._fenced is not None:
            raise ProducerFencedError(str(self._fenced))
        try:
            return call()
        except KafkaException as error:
            failure = transaction_error(error, f"{what} of {self._transactional_id!r}")
            if isinstance(failure, ProducerFencedError):
                self._fenced = failure
            raise failure from None

    def __repr__(self) -> str:
        return f"KafkaTransactionalProducer({self._transactional_id!r}{', fenced' if self._fenced else ''})"
