"""The in-memory broker's cooperative consumer groups: sticky, balanced assignments, partitions revoked
before they move, members that leave, are expelled and rejoin, topics that come and go."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.memory import MemoryBroker
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition
from support.memory_groups import fill, member, settle, tps

TP = TopicPartition


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
