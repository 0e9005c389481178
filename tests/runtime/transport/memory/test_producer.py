"""The in-memory broker's producer: partitioning, acks delivered by ``poll``, injected faults, and topics
created on first use."""

from __future__ import annotations

import threading

import pytest

from headwater.runtime.clock import VirtualClock
from headwater.runtime.transport.base import RecordMetadata
from headwater.runtime.transport.memory import MemoryBroker, MemoryProducer, MemoryTransport, key_partition, murmur2
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import TopicPartition

TP = TopicPartition


class Acks:
    """A delivery callback that keeps what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[Exception | None, RecordMetadata | None]] = []

    def __call__(self, error: Exception | None, metadata: RecordMetadata | None) -> None:
        self.calls.append((error, metadata))

    @property
    def offsets(self) -> list[tuple[str, int, int]]:
        return [(m.topic, m.partition, m.offset) for _, m in self.calls if m is not None]


def test_keyed_records_go_to_the_java_partition() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 7)
    producer = MemoryProducer(broker.state, {})
    for key in (b"21", b"foobar", b"abc", b""):
        producer.produce("t", b"v", key=key)
        producer.produce("t", b"v", key=key)
    assert key_partition(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    for key in (b"21", b"foobar", b"abc", b""):
        expected = (murmur2(key) & 0x7FFFFFFF) % 7
        assert [m.key for m in broker.messages("t", expected)].count(key) == 2


def test_null_keys_go_round_robin_per_topic() -> None:
    broker = MemoryBroker()
    broker.create_topic("a", 3)
    broker.create_topic("b", 2)
    producer = MemoryProducer(broker.state, {})
    acks = Acks()
    for topic in ["a", "a", "b", "a", "b", "a", "b"]:
        producer.produce(topic, b"v", on_delivery=acks)
    producer.poll(0)
    assert acks.offsets == [("a", 0, 0), ("a", 1, 0), ("b", 0, 0), ("a", 2, 0), ("b", 1, 0), ("a", 0, 1), ("b", 0, 1)]


def test_explicit_partition_is_used_and_checked() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 2)
    producer = MemoryProducer(broker.state, {})
    producer.produce("t", b"v", key=b"foobar", partition=1)
    assert [m.value for m in broker.messages("t", 1)] == [b"v"]
    with pytest.raises(ConnectError, match="Invalid partition 2"):
        producer.produce("t", b"v", partition=2)
    assert producer.sent == 1


def test_records_are_visible_at_once_and_acked_in_order_by_poll() -> None:
    broker = MemoryBroker()
    producer = MemoryTransport(broker).producer({})
    acks = Acks()
    for i in range(3):
        producer.produce("t", str(i).encode(), on_delivery=acks)
    assert [m.value for m in broker.messages("t")] == [b"0", b"1", b"2"]
    assert acks.calls == []
    assert producer.poll(0) == 3
    assert acks.calls == [(None, RecordMetadata("t", 0, i)) for i in range(3)]
    assert (producer.sent, producer.acked, producer.poll(0)) == (3, 3, 0)


def test_flush_delivers_and_reports_nothing_outstanding() -> None:
    producer = MemoryProducer(MemoryBroker().state, {})
    acks = Acks()
    producer.produce("t", b"v", on_delivery=acks)
    assert producer.flush(10_000) == 0
    assert acks.offsets == [("t", 0, 0)]


def test_timestamps_come_from_the_clock_unless_given() -> None:
    clock = VirtualClock(1_000)
    broker = MemoryBroker()
    producer = MemoryProducer(broker.state, {"clock": clock})
    headers = [("h", b"x")]
    producer.produce("t", b"a", headers=headers)
    clock.advance(5)
    producer.produce("t", b"b", timestamp=42)
    MemoryProducer(broker.state, {}).produce("t", b"c")
    a, b, c = broker.messages("t")
    assert (a.timestamp, b.timestamp, c.timestamp) == (1_000, 42, None)
    assert a.headers is headers
    assert tuple(b.headers) == ()


def test_produce_all_stores_each_records_headers_as_a_copy() -> None:
    broker = MemoryBroker()
    producer = MemoryProducer(broker.state, {})
    shared = (("source", b"db"),)
    headers = [[("trace", b"t0"), ("none", None)], None, shared, []]
    acks = Acks()
    assert producer.produce_all("t", [b"a", b"b", b"c", b"d"], None, 0, None, acks, 0, headers) == 4
    messages = broker.messages("t")
    assert [m.headers for m in messages] == [[("trace", b"t0"), ("none", None)], (), [("source", b"db")], ()]
    assert messages[0].headers is not headers[0], "the source may reuse its lists once the batch is sent"
    assert producer.poll(0) == 4 and len(acks.calls) == 4


def test_a_raising_delivery_callback_keeps_the_later_acks_queued() -> None:
    producer = MemoryProducer(MemoryBroker().state, {})
    acks = Acks()

    def boom(error: Exception | None, metadata: RecordMetadata | None) -> None:
        raise RuntimeError("callback failed")

    producer.produce("t", b"0", on_delivery=acks)
    producer.produce("t", b"1", on_delivery=boom)
    producer.produce("t", b"2", on_delivery=acks)
    with pytest.raises(RuntimeError, match="callback failed"):
        producer.poll(0)
    assert acks.offsets == [("t", 0, 0)]
    assert producer.poll(0) == 1
    assert acks.offsets == [("t", 0, 0), ("t", 0, 2)]
    assert producer.acked == 3


def test_held_acks_for_one_topic_wait_for_release() -> None:
    broker = MemoryBroker()
    producer = MemoryProducer(broker.state, {})
    acks = Acks()
    producer.hold_acks("held")
    producer.produce("held", b"0", on_delivery=acks)
    producer.produce("free", b"1", on_delivery=acks)
    producer.produce("held", b"2", on_delivery=acks)
    assert producer.flush(1_000) == 2
    assert acks.offsets == [("free", 0, 0)]
    assert producer.held_acks() == 2
    assert len(broker.messages("held")) == 2
    producer.release_acks("held")
    assert producer.poll(0) == 2
    assert acks.offsets == [("free", 0, 0), ("held", 0, 0), ("held", 0, 1)]
    assert producer.held_acks() == 0


def test_a_hold_applies_to_acks_already_queued() -> None:
    producer = MemoryProducer(MemoryBroker().state, {})
    producer.produce("t", b"0")
    producer.hold_acks()
    assert producer.poll(0) == 0
    producer.release_acks()
    assert producer.poll(0) == 1


def test_broker_wide_hold_applies_to_every_producer() -> None:
    broker = MemoryBroker()
    first, second = MemoryProducer(broker.state, {}), MemoryProducer(broker.state, {})
    broker.hold_acks()
    first.produce("a", b"0")
    second.produce("b", b"1")
    second.produce("b", b"2")
    assert (first.flush(0), second.flush(0)) == (1, 2)
    assert broker.held_acks() == 3
    broker.release_acks()
    assert (first.flush(0), second.flush(0), first.acked, second.acked) == (0, 0, 1, 2)


@pytest.mark.parametrize("on_broker", [False, True])
def test_failed_sends_raise_and_store_nothing(on_broker: bool) -> None:
    broker = MemoryBroker()
    producer = MemoryProducer(broker.state, {})
    (broker if on_broker else producer).fail_next_sends(2)
    for _ in range(2):
        with pytest.raises(RetriableError):
            producer.produce("t", b"v")
    producer.produce("t", b"ok")
    (broker if on_broker else producer).fail_next_sends(1, retriable=False)
    with pytest.raises(ConnectError) as raised:
        producer.produce("t", b"v")
    assert not isinstance(raised.value, RetriableError)
    assert [m.value for m in broker.messages("t")] == [b"ok"]
    assert producer.sent == 1


@pytest.mark.parametrize("on_broker", [False, True])
def test_failed_deliveries_report_through_the_callback(on_broker: bool) -> None:
    broker = MemoryBroker()
    producer = MemoryProducer(broker.state, {})
    acks = Acks()
    custom = ValueError("disk full")
    (broker if on_broker else producer).fail_next_deliveries(1)
    producer.produce("t", b"lost", on_delivery=acks)
    (broker if on_broker else producer).fail_next_deliveries(1, custom)
    producer.produce("t", b"lost too", on_delivery=acks)
    producer.produce("t", b"kept", on_delivery=acks)
    assert producer.poll(0) == 3
    (first_error, first_meta), (second_error, _), (third_error, third_meta) = acks.calls
    assert isinstance(first_error, ConnectError) and first_meta is None
    assert second_error is custom
    assert third_error is None and third_meta == RecordMetadata("t", 0, 0)
    assert [m.value for m in broker.messages("t")] == [b"kept"]
    assert (producer.sent, producer.acked, producer.failed) == (1, 1, 2)


def test_closed_producer_refuses_records() -> None:
    producer = MemoryProducer(MemoryBroker().state, {})
    producer.close()
    with pytest.raises(ConnectError, match="closed"):
        producer.produce("t", b"v")


def test_threads_can_produce_concurrently() -> None:
    broker = MemoryBroker(default_partitions=4)
    producers = [MemoryProducer(broker.state, {}) for _ in range(4)]

    def run(producer: MemoryProducer) -> None:
        for i in range(2_000):
            producer.produce("t", b"v", key=str(i).encode())
            producer.poll(0)

    threads = [threading.Thread(target=run, args=(p,)) for p in producers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(broker.messages("t")) == 8_000
    assert sum(p.flush(0) for p in producers) == 0
    assert sum(p.acked for p in producers) == 8_000
    for p in range(4):
        assert [m.offset for m in broker.messages("t", p)] == list(range(broker.end_offset(TP("t", p))))


def test_unknown_topics_are_created_with_the_default_partition_count() -> None:
    broker = MemoryBroker(default_partitions=3)
    MemoryProducer(broker.state, {}).produce("new", b"v")
    assert broker.topics() == {"new": 3}
