"""librdkafka's errors as the SDK's: retriable when librdkafka says so; a failed delivery a connector can cause also
says what the broker's refusal means (see :mod:`~headwater.runtime.transport.refusals`); a failed transaction call
as confluent-kafka documents it (``KafkaError.fatal()``: fenced for good; ``txn_requires_abort()``: abort, then
begin again; ``retriable()``: call again)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException

from headwater.runtime.transport.base import ProducerFencedError, TransactionAbortableError
from headwater.runtime.transport.refusals import (
    batch_size,
    invalid_batch,
    needs_key,
    too_large_for_topic,
    unknown_topic,
)
from headwater.sdk.errors import ConnectError, RetriableError

TOPIC_MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})
"""Consumer errors for a subscribed topic that does not exist yet (librdkafka: "Subscribed topic not available");
not retriable to librdkafka, yet its group consumer picks the topic up once it is created."""


def connect_error(error: KafkaError | KafkaException | Exception, report: Any = None) -> ConnectError:
    """A librdkafka error as the SDK's error type, retriable when librdkafka says so. For a failed delivery
    (``report`` is librdkafka's message), a refusal a connector can cause also says what it means
    (:mod:`~headwater.runtime.transport.refusals`)."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    if isinstance(kafka_error, KafkaError):
        cls = RetriableError if kafka_error.retriable() else ConnectError
        text = f"{kafka_error.name()}: {kafka_error.str()}"
        return cls(text if report is None else _refusal(kafka_error.code(), text, report))
    return ConnectError(str(error))


def _refusal(code: int, text: str, report: Any) -> str:
    """``text``, librdkafka's words for a failed delivery of ``report``, with what the broker's refusal means."""
    topic = str(report.topic())
    if code == KafkaError.INVALID_RECORD:  # the one record check a broker makes on the key: a compacted topic
        return needs_key(text, topic) if report.key() is None else invalid_batch(text, topic)
    if code == KafkaError.MSG_SIZE_TOO_LARGE:
        return too_large_for_topic(text, topic, batch_size(report.key(), report.value()))
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return unknown_topic(text, topic)
    return text


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
