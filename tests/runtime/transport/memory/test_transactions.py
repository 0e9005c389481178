"""The in-memory broker's transactional producer, beyond what it shares with Kafka's (tests/runtime/transport/
test_transactions.py): a commit while acks are held, the compacted view, a fenced producer."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.base import Message, ProducerFencedError
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.sdk.errors import RetriableError
from headwater.sdk.records import TopicPartition

TIMEOUT_MS = 30_000


def values(messages: list[Message]) -> list[bytes | None]:
    return [message.value for message in messages]


def test_memory_commit_with_held_acks_is_retriable_and_compaction_keeps_committed_records_only() -> None:
    broker = MemoryBroker()
    producer = MemoryTransport(broker).transactional_producer("tx", {})
    producer.init_transactions(TIMEOUT_MS)
    producer.begin()
    producer.produce("topic", b"aborted", b"a")
    producer.abort(TIMEOUT_MS)
    producer.begin()
    producer.produce("topic", b"committed", b"b")
    broker.hold_acks()
    with pytest.raises(RetriableError):
        producer.commit(TIMEOUT_MS)
    assert broker.compacted("topic") == {}

    broker.release_acks()
    producer.commit(TIMEOUT_MS)
    assert values(list(broker.compacted("topic").values())) == [b"committed"]
    assert values(broker.messages("topic")) == [b"aborted", b"committed"]
    assert broker.end_offset(TopicPartition("topic", 0)) == 4  # two records, two markers
    assert "epoch=0" in repr(producer)


def test_memory_fenced_producer_cannot_produce() -> None:
    transport = MemoryTransport()
    older = transport.transactional_producer("tx", {})
    older.init_transactions(TIMEOUT_MS)
    older.begin()
    transport.transactional_producer("tx", {}).init_transactions(TIMEOUT_MS)
    with pytest.raises(ProducerFencedError, match="fenced by a newer instance"):
        older.produce("topic", b"late")
