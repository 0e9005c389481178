"""The transactional producer on a real Kafka cluster: confluent-kafka's transactions API, its errors mapped as
confluent-kafka documents them (``KafkaError.fatal()``: fenced for good; ``txn_requires_abort()``: abort, then begin
again; ``retriable()``: call again)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    ProducerFencedError,
    RawHeaders,
    TransactionAbortableError,
)
from headwater.runtime.transport.kafka import KafkaProducer
from headwater.sdk.errors import ConnectError, RetriableError

_R = TypeVar("_R")

FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH, KafkaError._FATAL}
)
"""The fatal errors of a producer a newer one with its ``transactional.id`` fenced off (librdkafka raises
``_FENCED``; the broker answers ``PRODUCER_FENCED`` or ``INVALID_PRODUCER_EPOCH``; calls made after a fatal error
fail with ``_FATAL``)."""


def transaction_error(error: KafkaException, what: str) -> ConnectError:
    """The SDK's error for a transaction call librdkafka failed with ``error``."""
    kafka_error = error.args[0] if error.args else None
    if not isinstance(kafka_error, KafkaError):
        return ConnectError(f"{what}: {error}")
    text = f"{what}: {kafka_error.name()}: {kafka_error.str()}"
    if kafka_error.fatal() or kafka_error.code() in FENCED:
        fenced = kafka_error.code() in FENCED
        return ProducerFencedError(text) if fenced else ConnectError(text)
    if kafka_error.txn_requires_abort():
        return TransactionAbortableError(text)
    if kafka_error.retriable():
        return RetriableError(text)
    return ConnectError(text)


class KafkaTransactionalProducer(KafkaProducer):
    """A :class:`~headwater.runtime.transport.base.TransactionalProducer` on a Kafka cluster; ``config`` carries
    its ``transactional.id``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._transactional_id = str(config["transactional.id"])
        self._fenced: ProducerFencedError | None = None

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    def init_transactions(self, timeout_ms: int) -> None:
        self._call(lambda: self._producer.init_transactions(timeout_ms / 1000), "cannot initialise transactions")

    def begin(self) -> None:
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

    def abort(self, timeout_ms: int) -> None:
        self._call(lambda: self._producer.abort_transaction(timeout_ms / 1000), "cannot abort the transaction")

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
