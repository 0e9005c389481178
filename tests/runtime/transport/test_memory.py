"""The in-memory transport: partitioning, acks and faults, topics, and cooperative consumer groups."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from typing import Any

import pytest

from headwater.runtime.clock import VirtualClock
from headwater.runtime.transport.base import NewTopic, RecordMetadata
from headwater.runtime.transport.memory import (
    MemoryBroker,
    MemoryConsumer,
    MemoryProducer,
    MemoryTransport,
    key_partition,
    murmur2,
)
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
from headwater.sdk.records import TopicPartition

TP = TopicPartition


class Listener:
    """Records rebalance callbacks as (kind, partitions) events; can be told to raise."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.raise_on: str | None = None
        self.on_revoked_hook: Any = None

    def _record(self, kind: str, partitions: Collection[TopicPartition]) -> None:
        self.events.append((kind, frozenset(partitions)))
        if self.raise_on == kind:
            raise RuntimeError(f"{kind} failed")

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        if self.on_revoked_hook is not None:
            self.on_revoked_hook(partitions)
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self._record("lost", partitions)

    def take(self) -> list[tuple[str, frozenset[TopicPartition]]]:
        events, self.events = self.events, []
        return events


class Acks:
    """A delivery callback that keeps what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[Exception | None, RecordMetadata | None]] = []

    def __call__(self, error: Exception | None, metadata: RecordMetadata | None) -> None:
        self.calls.append((error, metadata))

    @property
    def offsets(self) -> list[tuple[str, int, int]]:
        return [(m.topic, m.partition, m.offset) for _, m in self.calls if m is not None]


def tps(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TP(topic, p) for p in partitions)


def fill(broker: MemoryBroker, topic: str, partitions: int, per_partition: int) -> None:
    broker.create_topic(topic, partitions)
    producer = MemoryProducer(broker, {})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}:{i}".encode(), partition=p)
    producer.flush(0)


def member(
    broker: MemoryBroker, topics: list[str], group: str = "g", config: Mapping[str, Any] | None = None
) -> tuple[MemoryConsumer, Listener]:
    consumer = MemoryTransport(broker).consumer(group, config or {})
    listener = Listener()
    consumer.subscribe(topics, listener)
    return consumer, listener


def settle(*consumers: MemoryConsumer, rounds: int = 3) -> None:
    for _ in range(rounds):
        for consumer in consumers:
            consumer.poll(0, 0)


# -- partitioning ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
        (b"", 275646681),
    ],
)
def test_murmur2_matches_kafka_utils(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_keyed_records_go_to_the_java_partition() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 7)
    producer = MemoryProducer(broker, {})
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
    producer = MemoryProducer(broker, {})
    acks = Acks()
    for topic in ["a", "a", "b", "a", "b", "a", "b"]:
        producer.produce(topic, b"v", on_delivery=acks)
    producer.poll(0)
    assert acks.offsets == [("a", 0, 0), ("a", 1, 0), ("b", 0, 0), ("a", 2, 0), ("b", 1, 0), ("a", 0, 1), ("b", 0, 1)]


def test_explicit_partition_is_used_and_checked() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 2)
    producer = MemoryProducer(broker, {})
    producer.produce("t", b"v", key=b"foobar", partition=1)
    assert [m.value for m in broker.messages("t", 1)] == [b"v"]
    with pytest.raises(ConnectError, match="Invalid partition 2"):
        producer.produce("t", b"v", partition=2)
    assert producer.sent == 1


# -- acks --------------------------------------------------------------------------------------------------------


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
    producer = MemoryProducer(MemoryBroker(), {})
    acks = Acks()
    producer.produce("t", b"v", on_delivery=acks)
    assert producer.flush(10_000) == 0
    assert acks.offsets == [("t", 0, 0)]


def test_timestamps_come_from_the_clock_unless_given() -> None:
    clock = VirtualClock(1_000)
    broker = MemoryBroker()
    producer = MemoryProducer(broker, {"clock": clock})
    headers = [("h", b"x")]
    producer.produce("t", b"a", headers=headers)
    clock.advance(5)
    producer.produce("t", b"b", timestamp=42)
    MemoryProducer(broker, {}).produce("t", b"c")
    a, b, c = broker.messages("t")
    assert (a.timestamp, b.timestamp, c.timestamp) == (1_000, 42, None)
    assert a.headers is headers
    assert tuple(b.headers) == ()


def test_produce_all_stores_each_records_headers_as_a_copy() -> None:
    broker = MemoryBroker()
    producer = MemoryProducer(broker, {})
    shared = (("source", b"db"),)
    headers = [[("trace", b"t0"), ("none", None)], None, shared, []]
    acks = Acks()
    assert producer.produce_all("t", [b"a", b"b", b"c", b"d"], None, 0, None, acks, 0, headers) == 4
    messages = broker.messages("t")
    assert [m.headers for m in messages] == [[("trace", b"t0"), ("none", None)], (), [("source", b"db")], ()]
    assert messages[0].headers is not headers[0], "the source may reuse its lists once the batch is sent"
    assert producer.poll(0) == 4 and len(acks.calls) == 4


def test_a_raising_delivery_callback_keeps_the_later_acks_queued() -> None:
    producer = MemoryProducer(MemoryBroker(), {})
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
    producer = MemoryProducer(broker, {})
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
    producer = MemoryProducer(MemoryBroker(), {})
    producer.produce("t", b"0")
    producer.hold_acks()
    assert producer.poll(0) == 0
    producer.release_acks()
    assert producer.poll(0) == 1


def test_broker_wide_hold_applies_to_every_producer() -> None:
    broker = MemoryBroker()
    first, second = MemoryProducer(broker, {}), MemoryProducer(broker, {})
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
    producer = MemoryProducer(broker, {})
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
    producer = MemoryProducer(broker, {})
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
    producer = MemoryProducer(MemoryBroker(), {})
    producer.close()
    with pytest.raises(ConnectError, match="closed"):
        producer.produce("t", b"v")


def test_threads_can_produce_concurrently() -> None:
    broker = MemoryBroker(default_partitions=4)
    producers = [MemoryProducer(broker, {}) for _ in range(4)]

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


# -- topics ------------------------------------------------------------------------------------------------------


def test_unknown_topics_are_created_with_the_default_partition_count() -> None:
    broker = MemoryBroker(default_partitions=3)
    MemoryProducer(broker, {}).produce("new", b"v")
    assert broker.topics() == {"new": 3}


def test_compacted_view_keeps_the_latest_value_per_key_and_drops_tombstones() -> None:
    broker = MemoryBroker()
    broker.create_topic("c", 1, {"cleanup.policy": "compact"})
    producer = MemoryProducer(broker, {})
    for key, value in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"1")]:
        producer.produce("c", value, key=key)
    view = broker.compacted("c")
    assert {k: m.value for k, m in view.items()} == {b"a": b"2", b"c": b"1"}
    assert view[b"a"].offset == 2
    assert len(broker.messages("c")) == 5
    assert broker.topic_config("c") == {"cleanup.policy": "compact"}


def test_topic_administration() -> None:
    broker = MemoryBroker()
    admin = MemoryTransport(broker).admin()
    admin.create_topics([NewTopic("a", 2), NewTopic("b", 1, config={"retention.ms": "1"})])
    admin.create_topics([NewTopic("a", 5)])
    assert admin.list_topics() == {"a": 2, "b": 1}
    assert broker.topic_config("b") == {"retention.ms": "1"}
    MemoryProducer(broker, {}).produce("a", b"v", partition=1)
    assert broker.end_offset(TP("a", 1)) == 1
    assert "a: [0, 1]" in repr(broker)
    with pytest.raises(ConnectError, match="Unknown topics"):
        admin.delete_topics(["a", "zzz"])
    admin.delete_topics(["a"])
    assert admin.list_topics() == {"b": 1}
    with pytest.raises(ConnectError, match="Unknown topic a"):
        broker.messages("a")


# -- consumer groups ---------------------------------------------------------------------------------------------


def test_a_single_member_gets_every_partition_at_its_first_poll() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 3)
    consumer, listener = member(broker, ["t"])
    assert consumer.member_id == "member-1"
    assert consumer.assignment() == frozenset()
    consumer.poll(10, 0)
    assert listener.take() == [("assigned", tps("t", 0, 1, 2))]
    assert broker.group_assignment("g") == {"member-1": tps("t", 0, 1, 2)}
    consumer.poll(10, 0)
    assert listener.take() == []


def test_a_joining_member_gets_partitions_only_after_the_owner_revoked_them() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 4)
    first, first_events = member(broker, ["t"])
    first.poll(0, 0)
    first_events.take()
    second, second_events = member(broker, ["t"])
    assert broker.group_members("g") == ["member-1", "member-2"]

    second.poll(0, 0)
    assert second_events.take() == []
    assert second.assignment() == frozenset()

    first.poll(0, 0)
    assert first_events.take() == [("revoked", tps("t", 2, 3))]
    assert first.assignment() == tps("t", 0, 1)

    second.poll(0, 0)
    assert second_events.take() == [("assigned", tps("t", 2, 3))]
    settle(first, second)
    assert first_events.take() == second_events.take() == []
    assert (
        broker.group_assignment("g")
        == broker.group_target("g")
        == {
            "member-1": tps("t", 0, 1),
            "member-2": tps("t", 2, 3),
        }
    )


def test_cooperative_rebalance_moves_only_what_balance_needs() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 6)
    a, a_events = member(broker, ["t"])
    b, b_events = member(broker, ["t"])
    settle(a, b)
    before = {"a": a.assignment(), "b": b.assignment()}
    assert len(before["a"]) == len(before["b"]) == 3
    a_events.take()
    b_events.take()

    c, c_events = member(broker, ["t"])
    settle(a, b, c)
    a_log, b_log = a_events.take(), b_events.take()
    assert [kind for kind, _ in a_log] == ["revoked"] and len(a_log[0][1]) == 1
    assert [kind for kind, _ in b_log] == ["revoked"] and len(b_log[0][1]) == 1
    assert c_events.take() == [("assigned", a_log[0][1] | b_log[0][1])]
    assert a.assignment() == before["a"] - a_log[0][1]
    assert b.assignment() == before["b"] - b_log[0][1]


@pytest.mark.parametrize(("members", "partitions"), [(1, 5), (2, 5), (3, 7), (4, 4), (5, 3), (3, 12)])
def test_assignment_is_balanced_and_complete(members: int, partitions: int) -> None:
    broker = MemoryBroker()
    broker.create_topic("x", partitions // 2 + 1)
    broker.create_topic("y", partitions - partitions // 2)
    consumers = []
    for _ in range(members):
        consumers.append(member(broker, ["x", "y"])[0])
        settle(*consumers)
    owned = [c.assignment() for c in consumers]
    counts = [len(o) for o in owned]
    assert max(counts) - min(counts) <= 1
    assert sum(counts) == len(frozenset().union(*owned)) == partitions + 1


def test_members_only_get_partitions_of_topics_they_subscribed() -> None:
    broker = MemoryBroker()
    broker.create_topic("a", 2)
    broker.create_topic("b", 2)
    both, _ = member(broker, ["a", "b"])
    only_b, _ = member(broker, ["b"])
    settle(both, only_b)
    assert both.assignment() == tps("a", 0, 1)
    assert only_b.assignment() == tps("b", 0, 1)


def test_closing_a_member_hands_its_partitions_to_the_others_without_revocation() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 4)
    stays, stays_events = member(broker, ["t"])
    leaves, leaves_events = member(broker, ["t"])
    settle(stays, leaves)
    stays_events.take()
    leaves_events.take()
    left_with = leaves.assignment()

    leaves.close()
    assert leaves_events.take() == []
    assert broker.group_members("g") == ["member-1"]
    stays.poll(0, 0)
    assert stays_events.take() == [("assigned", left_with)]
    assert stays.assignment() == tps("t", 0, 1, 2, 3)
    with pytest.raises(ConnectError, match="closed"):
        leaves.poll(1, 0)


def test_an_expelled_member_loses_its_partitions_and_rejoins() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 4)
    stays, stays_events = member(broker, ["t"])
    expelled, expelled_events = member(broker, ["t"])
    settle(stays, expelled)
    stays_events.take()
    expelled_events.take()
    owned = expelled.assignment()

    broker.expel_member("g", "member-2")
    assert broker.group_members("g") == ["member-1"]
    stays.poll(0, 0)
    assert stays_events.take() == [("assigned", owned)]

    expelled.poll(0, 0)
    assert expelled_events.take() == [("lost", owned)]
    assert expelled.member_id == "member-3"
    assert expelled.assignment() == frozenset()
    settle(stays, expelled)
    [(kind, moved)] = stays_events.take()
    assert kind == "revoked" and len(moved) == 2
    assert expelled_events.take() == [("assigned", moved)]
    with pytest.raises(ConnectError, match="no member member-2"):
        broker.expel_member("g", "member-2")


def test_new_topics_and_partitions_are_picked_up_at_the_next_poll() -> None:
    broker = MemoryBroker()
    consumer, events = member(broker, ["t", "later"])
    broker.create_topic("t", 1)
    consumer.poll(0, 0)
    assert events.take() == [("assigned", tps("t", 0))]
    broker.create_partitions("t", 3)
    broker.create_topic("later", 1)
    broker.create_topic("unsubscribed", 1)
    consumer.poll(0, 0)
    assert events.take() == [("assigned", tps("t", 1, 2) | tps("later", 0))]


def test_a_deleted_topic_is_revoked() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 2)
    consumer, events = member(broker, ["t"])
    consumer.poll(0, 0)
    broker.delete_topic("t")
    consumer.poll(0, 0)
    assert events.take() == [("assigned", tps("t", 0, 1)), ("revoked", tps("t", 0, 1))]
    assert consumer.assignment() == frozenset()


def test_a_raising_callback_propagates_after_the_change_is_applied() -> None:
    broker = MemoryBroker()
    broker.create_topic("t", 2)
    first, first_events = member(broker, ["t"])
    first.poll(0, 0)
    second, _ = member(broker, ["t"])
    first_events.raise_on = "revoked"
    with pytest.raises(RuntimeError, match="revoked failed"):
        first.poll(0, 0)
    assert first.assignment() == tps("t", 0)
    second.poll(0, 0)
    assert second.assignment() == tps("t", 1)

    third, third_events = member(broker, ["t"], group="other")
    third_events.raise_on = "assigned"
    with pytest.raises(RuntimeError, match="assigned failed"):
        third.poll(0, 0)
    assert third.assignment() == tps("t", 0, 1)


def test_partitions_are_still_assigned_inside_on_revoked() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 2, 5)
    first, first_events = member(broker, ["t"])
    first.poll(3, 0)
    before = first.position(TP("t", 1))
    seen: list[int] = []
    first_events.on_revoked_hook = lambda parts: seen.extend(first.position(tp) for tp in parts)
    member(broker, ["t"])
    first.poll(0, 0)
    assert seen == [before] and before > 0


# -- positions and fetching --------------------------------------------------------------------------------------


def test_positions_start_at_the_committed_offset_or_the_reset_policy() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 3, 5)
    earliest, _ = member(broker, ["t"], group="g1")
    earliest.commit({TP("t", 1): 4}, asynchronous=False)
    earliest.poll(0, 0)
    assert {tp.partition: earliest.position(tp) for tp in earliest.assignment()} == {0: 0, 1: 4, 2: 0}

    latest, _ = member(broker, ["t"], group="g1", config={"auto.offset.reset": "latest"})
    earliest.close()
    latest.poll(0, 0)
    assert {tp.partition: latest.position(tp) for tp in latest.assignment()} == {0: 5, 1: 4, 2: 5}

    with pytest.raises(ConfigError, match=r"auto\.offset\.reset"):
        MemoryConsumer(broker, "g", {"auto.offset.reset": "none"})


def test_the_new_owner_starts_where_the_old_one_committed_on_revocation() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 2, 10)
    first, first_events = member(broker, ["t"])
    assert len(first.poll(6, 0)) == 6
    first_events.on_revoked_hook = lambda parts: first.commit(
        {tp: first.position(tp) for tp in parts}, asynchronous=False
    )
    second, _ = member(broker, ["t"])
    settle(first, second)
    assert second.assignment() == tps("t", 1)
    assert second.position(TP("t", 1)) == 3
    assert [m.offset for m in second.poll(10, 0)] == list(range(3, 10))


def test_seek_moves_the_position_of_an_assigned_partition_only() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 1, 5)
    consumer = MemoryConsumer(broker, None, {})
    consumer.assign([TP("t", 0)])
    consumer.seek(TP("t", 0), 3)
    assert [m.offset for m in consumer.poll(10, 0)] == [3, 4]
    assert consumer.position(TP("t", 0)) == 5
    with pytest.raises(ConnectError, match="t-1 are not assigned"):
        consumer.seek(TP("t", 1), 0)
    with pytest.raises(ConnectError, match="not assigned"):
        consumer.position(TP("t", 1))


def test_manual_assignment_uses_the_groups_committed_offsets() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 2, 4)
    broker.consumer_group("g").committed[TP("t", 0)] = 2
    consumer = MemoryConsumer(broker, "g", {})
    consumer.assign([TP("t", 0), TP("t", 1)])
    assert broker.group_members("g") == []
    assert (consumer.position(TP("t", 0)), consumer.position(TP("t", 1))) == (2, 0)
    consumer.poll(100, 0)
    consumer.assign([TP("t", 1)])
    assert consumer.assignment() == tps("t", 1)
    assert consumer.position(TP("t", 1)) == 4
    with pytest.raises(ConnectError, match="cannot also subscribe"):
        consumer.subscribe(["t"], Listener())


def test_pause_stops_fetching_a_partition_until_resumed() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 2, 3)
    consumer = MemoryConsumer(broker, None, {})
    consumer.assign([TP("t", 0), TP("t", 1)])
    consumer.pause([TP("t", 0)])
    assert consumer.paused() == tps("t", 0)
    assert {m.partition for m in consumer.poll(10, 0)} == {1}
    assert consumer.poll(10, 0) == []
    consumer.resume([TP("t", 0)])
    assert [(m.partition, m.offset) for m in consumer.poll(10, 0)] == [(0, 0), (0, 1), (0, 2)]
    with pytest.raises(ConnectError, match="not assigned"):
        consumer.pause([TP("t", 7)])
    with pytest.raises(ConnectError, match="not assigned"):
        consumer.resume([TP("t", 7)])


def test_fetching_takes_turns_across_partitions() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 3, 4)
    consumer = MemoryConsumer(broker, None, {})
    consumer.assign([TP("t", p) for p in range(3)])
    singles = [(m.partition, m.offset) for _ in range(4) for m in consumer.poll(1, 0)]
    assert singles == [(0, 0), (1, 0), (2, 0), (0, 1)]
    batch = [(m.partition, m.offset) for m in consumer.poll(6, 0)]
    assert batch == [(1, 1), (1, 2), (2, 1), (2, 2), (0, 2), (0, 3)]
    assert [(m.partition, m.offset) for m in consumer.poll(10, 0)] == [(1, 3), (2, 3)]
    assert consumer.poll(10, 0) == []


def test_fetching_serves_what_is_left_when_some_partitions_run_dry() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 2, 0)
    producer = MemoryProducer(broker, {})
    for _ in range(8):
        producer.produce("t", b"v", partition=1)
    producer.produce("t", b"v", partition=0)
    consumer = MemoryConsumer(broker, None, {})
    consumer.assign([TP("t", 0), TP("t", 1)])
    assert [(m.partition, m.offset) for m in consumer.poll(5, 0)] == [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3)]


# -- commits -----------------------------------------------------------------------------------------------------


def test_sync_and_async_commits_store_offsets_and_report() -> None:
    broker = MemoryBroker()
    fill(broker, "t", 1, 3)
    consumer, _ = member(broker, ["t"])
    done: list[tuple[Exception | None, dict[TopicPartition, int]]] = []

    def on_complete(error: Exception | None, offsets: Mapping[TopicPartition, int]) -> None:
        done.append((error, dict(offsets)))

    consumer.commit({TP("t", 0): 1}, asynchronous=False, on_complete=on_complete)
    assert done == [(None, {TP("t", 0): 1})]
    consumer.commit({TP("t", 0): 2}, asynchronous=True, on_complete=on_complete)
    assert broker.committed("g") == {TP("t", 0): 2}
    assert len(done) == 1
    consumer.poll(0, 0)
    assert done[1] == (None, {TP("t", 0): 2})
    assert consumer.committed([TP("t", 0), TP("t", 9)]) == {TP("t", 0): 2, TP("t", 9): None}
    assert broker.commit_count("g") == 2


def test_injected_commit_failures_raise_or_report_and_store_nothing() -> None:
    broker = MemoryBroker()
    consumer, _ = member(broker, ["t"])
    done: list[Exception | None] = []
    custom = RetriableError("coordinator moved")
    broker.fail_next_commits("g", 2, custom)
    with pytest.raises(RetriableError, match="coordinator moved"):
        consumer.commit({TP("t", 0): 1}, asynchronous=False)
    consumer.commit({TP("t", 0): 2}, asynchronous=True, on_complete=lambda error, _: done.append(error))
    assert broker.committed("g") == {}
    assert done == []
    consumer.poll(0, 0)
    assert done == [custom]
    broker.fail_next_commits("g", 1)
    with pytest.raises(ConnectError, match="Commit of group g failed"):
        consumer.commit({TP("t", 0): 3}, asynchronous=False)
    consumer.commit({TP("t", 0): 4}, asynchronous=False)
    assert broker.committed("g") == {TP("t", 0): 4}
    assert broker.commit_count("g") == 1


def test_commits_need_a_group() -> None:
    consumer = MemoryConsumer(MemoryBroker(), None, {})
    with pytest.raises(ConnectError, match="group id"):
        consumer.commit({TP("t", 0): 1}, asynchronous=False)
    with pytest.raises(ConnectError, match="group id"):
        consumer.subscribe(["t"], Listener())
    assert consumer.committed([TP("t", 0)]) == {TP("t", 0): None}


def test_the_admin_creates_topics_as_a_kafka_controller_does() -> None:
    broker = MemoryBroker(default_partitions=2, brokers=1)
    admin = MemoryTransport(broker).admin()
    admin.create_topics([NewTopic("defaults", -1, -1)])
    assert broker.topics()["defaults"] == 2, "-1 partitions: the broker's default"
    refusals = [
        (NewTopic("rf", 1, 2), "The target replication factor of 2 cannot be reached because only 1 broker(s)"),
        (NewTopic("rf0", 1, 0), "Replication factor must be larger than 0, or -1 to use the default value."),
        (NewTopic("p0", 0, 1), "Number of partitions was set to an invalid non-positive value."),
        (NewTopic("cfg", 1, 1, {"no.such": "x"}), "Unknown topic config name: no.such"),
        (NewTopic("pol", 1, 1, {"cleanup.policy": "keep"}), "Invalid value keep for configuration cleanup.policy"),
    ]
    for topic, reason in refusals:
        with pytest.raises(ConnectError) as refused:
            admin.create_topics([topic])
        assert str(refused.value).startswith(f"cannot create topic {topic.name}: ") and reason in str(refused.value)
        assert topic.name not in broker.topics()
    assert admin.describe_topics(["defaults", "rf", "missing"]) == {"defaults": 2}
