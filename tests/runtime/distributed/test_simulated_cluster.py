"""Distributed mode on the simulated worker: distributed workers over the in-memory broker and the virtual clock,
so a rebalance takes the same course on every run. The same scenarios run with real worker processes on a real
broker in test_cluster.py."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from headwater.harness import SimulatedCluster
from headwater.harness.simulated_cluster import OFFSETS_TOPIC, STATUS_TOPIC, ClusterWorker
from headwater.runtime.storage import KafkaStatusStore, Status
from headwater.runtime.storage.offsets import parse_offset_key
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.transport.memory import MemoryTransport

SOURCE = "support.counting_source:CountingSourceConnector"
CONNECTORS = ("a", "b")
TASKS = sorted(TaskId(name, task) for name in CONNECTORS for task in range(4))


def create(cluster: SimulatedCluster) -> None:
    for name in CONNECTORS:
        config = {"connector.class": SOURCE, "tasks.max": "4", "topic": f"out-{name}"}
        cluster.live[0].herder.put_connector_config(name, config)


def every_task_once(cluster: SimulatedCluster) -> bool:
    return cluster.running() == TASKS


def balanced(cluster: SimulatedCluster) -> bool:
    """Every task runs once and the live workers' task counts differ by one at most."""
    counts = [len(tasks) for tasks in cluster.assignment().values()]
    return every_task_once(cluster) and max(counts) - min(counts) <= 1


def connector_owners(cluster: SimulatedCluster) -> Counter[str]:
    return Counter(name for worker in cluster.live for name in worker.worker.connectors)


def committed_offsets(cluster: SimulatedCluster) -> dict[tuple[str, int], list[int]]:
    """Every offset committed for each source partition, in commit order."""
    found: dict[tuple[str, int], list[int]] = {}
    for message in cluster.broker.messages(OFFSETS_TOPIC):
        parsed = parse_offset_key(message.key or b"")
        assert parsed is not None and parsed[1] is not None and message.value is not None
        found.setdefault((parsed[0], parsed[1]["task"]), []).append(json.loads(message.value)["seq"])
    return found


def written(cluster: SimulatedCluster, name: str) -> dict[int, set[int]]:
    found: dict[int, set[int]] = {}
    for message in cluster.broker.messages(f"out-{name}"):
        value = json.loads(message.value or b"null")
        found.setdefault(value["task"], set()).add(value["seq"])
    return found


def test_a_crash_and_a_join_leave_every_task_running_once_and_no_offset_going_back() -> None:
    cluster = SimulatedCluster(3, {"offset.flush.interval.ms": "100"}, session_timeout_ms=3_000)
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks running once, spread over 3 workers")
    cluster.advance(1_000)

    crashed = cluster.workers[1]
    moved = crashed.tasks()
    cluster.crash(crashed)
    cluster.advance(1_000)
    assert sorted(cluster.running() + moved) == TASKS  # within the session timeout, its tasks run nowhere else
    cluster.run_until(lambda: every_task_once(cluster), what="the crashed worker's tasks taken over")
    joined = cluster.join()
    cluster.run_until(lambda: balanced(cluster) and joined.tasks() != [], what="the new worker taking its share")
    cluster.advance(1_000)

    assert every_task_once(cluster)
    assert sorted(len(tasks) for tasks in cluster.assignment().values()) == [2, 3, 3]
    assert connector_owners(cluster) == Counter(CONNECTORS)
    offsets = committed_offsets(cluster)
    assert sorted(offsets) == sorted((id.connector, id.task) for id in TASKS)
    for partition, seqs in offsets.items():
        assert seqs == sorted(seqs), f"the committed offset of {partition} went back: {seqs}"
    for name in CONNECTORS:
        for task, seqs in written(cluster, name).items():
            assert seqs == set(range(max(seqs) + 1)), f"{name}-{task} lost records"
            assert max(seqs) >= offsets[(name, task)][-1]


def test_a_worker_that_leaves_hands_its_tasks_over_after_its_last_commit() -> None:
    cluster = SimulatedCluster(2, {"offset.flush.interval.ms": "100"})
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks spread over 2 workers")
    cluster.advance(500)
    leaving = cluster.workers[0]
    cluster.leave(leaving)
    cluster.run_until(lambda: cluster.assignment() == {"worker-2": TASKS}, what="the other worker running all")
    cluster.advance(500)
    offsets = committed_offsets(cluster)
    for partition, seqs in offsets.items():
        assert seqs == sorted(seqs), f"the committed offset of {partition} went back: {seqs}"
    for name in CONNECTORS:
        for task, seqs in written(cluster, name).items():
            assert seqs == set(range(max(seqs) + 1)), f"{name}-{task} lost records"


def test_a_connector_deleted_during_a_rebalance_runs_nowhere_afterwards() -> None:
    cluster = SimulatedCluster(3)
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks spread over 3 workers")
    cluster.join()
    cluster.step()  # the new worker joins the groups: a rebalance starts
    cluster.live[0].herder.delete_connector("a")
    cluster.run_until(
        lambda: cluster.running() == [id for id in TASKS if id.connector == "b"] and balanced_over(cluster, 4),
        what="only b's tasks running, spread over 4 workers",
    )
    assert connector_owners(cluster) == Counter(["b"])
    for worker in cluster.live:
        assert worker.herder.connectors() == ["b"]
        worker.status_store.refresh()
        assert worker.status_store.connector("a") is None
        assert worker.status_store.tasks("a") == {}


def balanced_over(cluster: SimulatedCluster, workers: int) -> bool:
    counts = [len(tasks) for tasks in cluster.assignment().values()]
    return len(counts) == workers and max(counts) - min(counts) <= 1


def test_patches_through_two_workers_at_once_keep_both_changes() -> None:
    cluster = SimulatedCluster(2)
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks spread over 2 workers")
    first, second = cluster.live
    # the second worker has not read the first's patch when it merges its own: a read-modify-write would lose it
    first.herder.patch_connector_config("a", {"topic": "out-a2"})
    second.herder.patch_connector_config("a", {"tasks.max": "2"})
    expected = {"connector.class": SOURCE, "tasks.max": "2", "topic": "out-a2", "name": "a"}
    for worker in cluster.live:
        worker.config_store.refresh()
        assert worker.herder.connector_config("a") == expected
    cluster.run_until(lambda: [id.task for id in cluster.running(["a"])] == [0, 1], what="a's two new tasks")
    assert {task["topic"] for task in first.herder.tasks("a")} == {"out-a2"}


def test_a_connector_created_paused_or_paused_from_stopped_has_no_task_until_resumed() -> None:
    """As Kafka Connect's distributed herder, which asks only a STARTED connector for task configs (KIP-980)."""
    cluster = SimulatedCluster(2)
    first, second = cluster.live
    config = {"connector.class": SOURCE, "tasks.max": "2", "topic": "out-a"}
    first.herder.put_connector_config("a", config, initial_state="PAUSED")
    first.herder.put_connector_config("b", {**config, "topic": "out-b"}, initial_state="STOPPED")
    second.herder.pause_connector("b")

    def paused(worker: ClusterWorker, name: str) -> bool:
        found = worker.status_store.connector(name)
        return found is not None and found.state == "PAUSED"

    cluster.run_until(
        lambda: all(paused(worker, name) for worker in cluster.live for name in CONNECTORS),
        what="both connectors PAUSED",
    )
    cluster.advance(500)
    for worker in cluster.live:
        assert [worker.herder.tasks(name) for name in CONNECTORS] == [[], []]
    assert cluster.running() == []
    second.herder.resume_connector("a")
    first.herder.resume_connector("b")
    cluster.run_until(lambda: len(cluster.running()) == 4, what="two tasks of each once resumed")


def status_records(cluster: SimulatedCluster, id: TaskId) -> list[tuple[str, str, int]]:
    """(state, worker, generation) of every record in the status topic for the task, in order."""
    key = f"status-task-{id}".encode()
    values = [json.loads(m.value) for m in cluster.broker.messages(STATUS_TOPIC) if m.key == key and m.value]
    return [(value["state"], value["worker_id"], value["generation"]) for value in values]


def fail_late(worker: ClusterWorker, id: TaskId, monkeypatch: pytest.MonkeyPatch) -> None:
    """The task still running on ``worker`` fails: its ``poll`` raises at its next pass."""

    def boom() -> None:
        raise RuntimeError(f"{id} fails on {worker.name}, which no longer owns it")

    task = worker.worker.tasks[id]
    monkeypatch.setattr(task.task, "poll", boom)
    task.step()
    assert task.state is State.FAILED


def test_a_zombie_worker_s_late_failures_leave_the_tasks_running_where_they_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that lost its slots but still runs its tasks: a FAILED it writes before it read the newer runs'
    RUNNING (its own check cannot see them) is skipped by every reader; once it has read them it writes none."""
    cluster = SimulatedCluster(2, session_timeout_ms=3_000)
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks spread over 2 workers")
    zombie, taker = cluster.workers
    moved = zombie.tasks()
    old = {id: zombie.herder.generations.of(*id) for id in moved}
    cluster.crash(zombie)
    cluster.run_until(lambda: every_task_once(cluster), what="the crashed worker's tasks taken over")
    for id in moved:  # each new run's generation is one more than the run it took over from
        assert taker.status_store.task(*id) == Status("RUNNING", None, taker.name, old[id] + 1)

    first, second, *rest = moved
    fail_late(zombie, first, monkeypatch)
    assert status_records(cluster, first)[-2:] == [
        ("RUNNING", taker.name, old[first] + 1),
        ("FAILED", zombie.name, old[first]),
    ]
    fresh = KafkaStatusStore(MemoryTransport(cluster.broker), STATUS_TOPIC, partitions=2)
    fresh.start()
    for store in (taker.status_store, zombie.status_store, fresh):
        store.refresh()
        assert store.task(*first) == Status("RUNNING", None, taker.name, old[first] + 1)

    written = {id: status_records(cluster, id) for id in moved}
    fail_late(zombie, second, monkeypatch)
    zombie.worker.stop_tasks(rest)  # its shutdown reports (UNASSIGNED)
    assert {id: status_records(cluster, id) for id in moved} == written
    fresh.refresh()
    assert {id: fresh.task(*id) for id in moved} == {
        id: Status("RUNNING", None, taker.name, old[id] + 1) for id in moved
    }
    fresh.stop()


def test_a_task_taken_over_reads_the_status_topic_first_so_its_run_is_the_newest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker taking a task over reads the status topic to its end before it starts the task, even when its
    loop's reads lag behind: its run's generation is one more than the last one the previous owner wrote."""
    cluster = SimulatedCluster(2, session_timeout_ms=3_000)
    create(cluster)
    cluster.run_until(lambda: balanced(cluster), what="8 tasks spread over 2 workers")
    owner, taker = cluster.workers
    id = owner.tasks()[0]
    before = owner.herder.generations.of(*id)
    log, read = taker.status_store.log, type(taker.status_store.log).read_available
    monkeypatch.setattr(log, "read_available", lambda timeout_ms=0: 0)  # its loop's reads lag behind ...
    monkeypatch.setattr(log, "read_to_end", lambda timeout_ms=None: read(log))  # ... a read to the end does not
    owner.herder.restart_task(id)
    cluster.run_until(lambda: owner.herder.generations.of(*id) == before + 1, what=f"{id} restarted on its owner")
    assert taker.status_store.task(*id) == Status("RUNNING", None, owner.name, before)  # the taker lags
    cluster.crash(owner)
    cluster.run_until(lambda: id in taker.tasks(), what=f"{id} taken over")
    assert status_records(cluster, id)[-1] == ("RUNNING", taker.name, before + 2)
