"""The in-memory broker's consumer: start positions, seeks, manual assignment, pauses, fair fetching, and
commits."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from headwater.runtime.transport.memory import MemoryBroker, MemoryConsumer, MemoryProducer
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
from headwater.sdk.records import TopicPartition
from support.memory_groups import Listener, fill, member, settle, tps

TP = TopicPartition


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
        MemoryConsumer(broker.state, "g", {"auto.offset.reset": "none"})


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
    consumer = MemoryConsumer(broker.state, None, {})
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
    consumer = MemoryConsumer(broker.state, "g", {})
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
    consumer = MemoryConsumer(broker.state, None, {})
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
    consumer = MemoryConsumer(broker.state, None, {})
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
    producer = MemoryProducer(broker.state, {})
    for _ in range(8):
        producer.produce("t", b"v", partition=1)
    producer.produce("t", b"v", partition=0)
    consumer = MemoryConsumer(broker.state, None, {})
    consumer.assign([TP("t", 0), TP("t", 1)])
    assert [(m.partition, m.offset) for m in consumer.poll(5, 0)] == [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3)]


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
    consumer = MemoryConsumer(MemoryBroker().state, None, {})
    with pytest.raises(ConnectError, match="group id"):
        consumer.commit({TP("t", 0): 1}, asynchronous=False)
    with pytest.raises(ConnectError, match="group id"):
        consumer.subscribe(["t"], Listener())
    assert consumer.committed([TP("t", 0)]) == {TP("t", 0): None}
