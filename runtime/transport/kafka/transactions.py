"""The transactional producer on a real Kafka cluster: confluent-kafka's transactions API, its errors mapped as
confluent-kafka documents them (:func:`~headwater.runtime.transport.kafka.errors.transaction_error`); once fenced,
it refuses every further call."""

from __future__ import annotations

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
