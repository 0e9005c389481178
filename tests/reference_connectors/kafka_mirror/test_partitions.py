"""Partitions with leaders, task configs grouped by leader, and the partition monitor's change detection."""

from __future__ import annotations

import threading

import pytest

from headwater.reference_connectors.kafka_mirror import (
    TASK_PARTITIONS,
    LeaderTopicPartition,
    PartitionMonitor,
    group_partitions,
    task_configs,
)
from headwater.reference_connectors.kafka_mirror.partitions import assigned_partitions
from headwater.sdk import ConnectError, TopicPartition

LTP = LeaderTopicPartition


def test_leader_topic_partition_round_trips_through_its_string() -> None:
    for item in (LTP(1, "orders", 0), LTP(-1, "a.b-c_d", 12)):
        assert LTP.parse(str(item)) == item
    assert str(LTP(3, "t", 2)) == "3:t:2"


@pytest.mark.parametrize("text", ["", "1:t", "1:t:2:3", "x:t:0", "1::0", "1:t:zero"])
def test_malformed_leader_topic_partitions_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="leader:topic:partition"):
        LTP.parse(text)


@pytest.mark.parametrize(
    ("count", "groups", "sizes"), [(5, 2, [3, 2]), (4, 4, [1, 1, 1, 1]), (7, 3, [3, 2, 2]), (2, 3, [1, 1, 0])]
)
def test_groups_are_contiguous_and_differ_by_at_most_one(count: int, groups: int, sizes: list[int]) -> None:
    found = group_partitions(list(range(count)), groups)
    assert [len(g) for g in found] == sizes
    assert [item for group in found for item in group] == list(range(count))


def test_one_partition_gives_one_task_and_no_partitions_no_task() -> None:
    assert len(task_configs({"name": "m"}, [LTP(1, "t", 0)], 4)) == 1
    assert task_configs({"name": "m"}, [], 4) == []


def test_tasks_are_min_of_tasks_max_and_partitions() -> None:
    two = [LTP(1, "t", 0), LTP(1, "t", 1)]
    one_task = task_configs({"name": "m"}, two, 1)
    assert [c[TASK_PARTITIONS] for c in one_task] == ["1:t:0,1:t:1"]
    assert [c[TASK_PARTITIONS] for c in task_configs({"name": "m"}, two, 2)] == ["1:t:0", "1:t:1"]
    assert len(task_configs({"name": "m"}, two, 10)) == 2


def test_task_configs_keep_the_connector_config_and_group_partitions_by_leader() -> None:
    partitions = [LTP(p % 2 + 1, topic, p) for topic in ("a", "b") for p in range(4)]  # leaders 1, 2, 1, 2
    configs = task_configs({"name": "m", "source.group.id": "g"}, partitions, 2)
    assert all(c["name"] == "m" and c["source.group.id"] == "g" for c in configs)
    leaders = [{LTP.parse(item).leader for item in c[TASK_PARTITIONS].split(",")} for c in configs]
    assert leaders == [{1}, {2}]
    assigned = [tp for c in configs for tp in assigned_partitions(c)]
    assert sorted(assigned) == sorted(p.topic_partition for p in partitions)


def test_task_configs_do_not_depend_on_the_order_partitions_are_found_in() -> None:
    partitions = [LTP(2, "b", 1), LTP(1, "a", 0), LTP(1, "b", 0), LTP(2, "a", 1)]
    assert task_configs({}, partitions, 3) == task_configs({}, list(reversed(partitions)), 3)


def test_assigned_partitions_reads_a_task_config() -> None:
    config = {TASK_PARTITIONS: "1:orders:0, 2:orders:1"}
    assert assigned_partitions(config) == [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    assert assigned_partitions({}) == []


class Source:
    """What the monitor's fetch returns, step by step; raises when ``failing``."""

    def __init__(self, *partitions: LTP) -> None:
        self.partitions = frozenset(partitions)
        self.failing = False
        self.calls = 0

    def __call__(self) -> frozenset[LTP]:
        self.calls += 1
        if self.failing:
            raise TimeoutError("the source cluster did not answer")
        return self.partitions


def make_monitor(source: Source, leaders_matter: bool = False, interval_ms: int = 3_600_000) -> PartitionMonitor:
    changes: list[int] = []
    monitor = PartitionMonitor(source, interval_ms, lambda: changes.append(1), leaders_matter)
    monitor.start()
    return monitor


def test_the_first_fetch_happens_in_start_and_a_failure_fails_the_start() -> None:
    source = Source(LTP(1, "t", 0))
    monitor = make_monitor(source)
    assert source.calls == 1 and monitor.partitions == {LTP(1, "t", 0)}
    monitor.stop(1000)
    source.failing = True
    with pytest.raises(ConnectError, match="did not answer"):
        PartitionMonitor(source, 1000, lambda: None).start()


def test_a_new_or_removed_partition_is_a_change_and_an_unchanged_list_is_not() -> None:
    source = Source(LTP(1, "t", 0))
    monitor = make_monitor(source)
    assert monitor.check() is False
    source.partitions = frozenset({LTP(1, "t", 0), LTP(1, "t", 1)})
    assert monitor.check() is True and monitor.partitions == source.partitions
    source.partitions = frozenset({LTP(1, "t", 1)})
    assert monitor.check() is True
    assert monitor.changes == 2
    monitor.stop(1000)


@pytest.mark.parametrize(("leaders_matter", "changed"), [(False, False), (True, True)])
def test_a_leader_change_is_a_change_only_when_enabled(leaders_matter: bool, changed: bool) -> None:
    source = Source(LTP(1, "t", 0))
    monitor = make_monitor(source, leaders_matter)
    source.partitions = frozenset({LTP(2, "t", 0)})
    assert monitor.check() is changed
    assert monitor.partitions == {LTP(2, "t", 0)}  # task configs use the newest leaders either way
    monitor.stop(1000)


def test_a_failed_check_keeps_the_last_partitions_and_counts_the_failure() -> None:
    source = Source(LTP(1, "t", 0))
    monitor = make_monitor(source)
    source.failing = True
    assert monitor.check() is False
    assert monitor.partitions == {LTP(1, "t", 0)} and monitor.failures == 1
    monitor.stop(1000)


def wait_for(event: threading.Event, what: str, timeout_s: float = 10) -> None:
    assert event.wait(timeout_s), f"{what} did not happen within {timeout_s} s"


def test_the_thread_checks_every_interval_and_requests_a_reconfiguration() -> None:
    source = Source(LTP(1, "t", 0))
    requested = threading.Event()
    monitor = PartitionMonitor(source, 20, requested.set)
    monitor.start()
    source.partitions = frozenset({LTP(1, "t", 0), LTP(1, "u", 0)})
    wait_for(requested, "a reconfiguration request")
    assert monitor.changes == 1 and source.calls >= 2
    assert monitor.stop(5000) is True
    calls = source.calls
    assert monitor.check() is False and source.calls == calls + 1  # stopped: only explicit checks fetch
    assert "running=False" in repr(monitor)


def test_stop_gives_up_on_a_check_that_outlives_the_wait() -> None:
    release = threading.Event()
    checking = threading.Event()
    calls: list[int] = []

    def blocked() -> frozenset[LTP]:
        calls.append(1)
        if len(calls) > 1:  # every check after the first in start() blocks until released
            checking.set()
            release.wait(10)
        return frozenset()

    monitor = PartitionMonitor(blocked, 1, lambda: None)
    monitor.start()
    wait_for(checking, "a check on the monitor's thread")
    assert monitor.stop(50) is False
    release.set()
