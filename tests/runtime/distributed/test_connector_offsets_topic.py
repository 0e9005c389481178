"""A source connector's own offsets topic (``offsets.storage.topic``, KIP-618) on the simulated cluster, with and
without exactly-once support: its tasks write their offsets there (and copy them to the worker's offsets topic, as
Kafka Connect's ``ConnectorOffsetBackingStore`` does), resume from it across a crash, and fall back to the worker's
topic for a partition it lacks; the REST offsets endpoints read the combined view and write where the tasks do."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from headwater.harness import SimulatedCluster
from headwater.harness.simulated_cluster import OFFSETS_TOPIC
from headwater.runtime.tasks.base import TaskId

SOURCE = "support.counting_source:CountingSourceConnector"
ENABLED = {"exactly.once.source.support": "enabled", "offset.flush.interval.ms": "100"}
DISABLED = {"exactly.once.source.support": "disabled", "offset.flush.interval.ms": "100"}
MODES = pytest.mark.parametrize("config", [ENABLED, DISABLED], ids=["exactly-once", "at-least-once"])
OWN = "seq-offsets"


def create(cluster: SimulatedCluster, tasks: int = 2, **extra: Any) -> None:
    config = {"connector.class": SOURCE, "tasks.max": str(tasks), "topic": "out", "offsets.storage.topic": OWN}
    cluster.live[0].herder.put_connector_config("seq", {**config, **extra})


def running(cluster: SimulatedCluster, tasks: int = 2) -> bool:
    return cluster.running(["seq"]) == [TaskId("seq", task) for task in range(tasks)]


def partition(task: int) -> dict[str, Any]:
    return {"connector": "seq", "task": task}


def seqs(cluster: SimulatedCluster) -> dict[int, Counter[int]]:
    """Task -> how many times each sequence number is in the data topic, as a read_committed reader sees it."""
    found: dict[int, Counter[int]] = {}
    if "out" not in cluster.broker.topics():
        return found
    for message in cluster.broker.messages("out", committed_only=True):
        value = json.loads(message.value or b"null")
        found.setdefault(value["task"], Counter())[value["seq"]] += 1
    return found


def stored(cluster: SimulatedCluster, topic: str) -> dict[int, int | None]:
    """Task -> the latest committed offset of its partition in an offsets topic (``None``: deleted)."""
    found: dict[int, int | None] = {}
    for message in cluster.broker.messages(topic, committed_only=True):
        connector, where = json.loads(message.key or b"null")
        if connector == "seq":
            found[where["task"]] = None if message.value is None else json.loads(message.value)["seq"]
    return found


@MODES
def test_tasks_write_their_offsets_to_the_connector_topic_and_resume_from_it_across_a_crash(
    config: dict[str, str],
) -> None:
    cluster = SimulatedCluster(2, config, session_timeout_ms=3_000)
    create(cluster)
    cluster.run_until(lambda: running(cluster), what="2 tasks running")
    cluster.advance(1_050)
    cluster.crash(cluster.workers[1])
    cluster.run_until(lambda: running(cluster) and len(cluster.live) == 1, what="the crashed worker's task taken over")
    cluster.advance(1_000)
    cluster.live[0].herder.stop()

    found = seqs(cluster)
    assert sorted(found) == [0, 1]
    for task, counted in found.items():
        top = max(counted)
        assert sorted(counted) == list(range(top + 1)), f"task {task} skipped records"
        if config is ENABLED:
            assert set(counted.values()) == {1}, f"task {task} duplicated records: {counted}"
        else:
            assert counted[0] == 1, f"task {task} started over instead of resuming: {counted}"
    own = stored(cluster, OWN)
    assert sorted(own) == [0, 1]
    if config is ENABLED:  # records and offsets committed together
        assert own == {task: max(counted) for task, counted in found.items()}
    assert stored(cluster, OFFSETS_TOPIC) == own  # the copy Kafka Connect writes to the worker's topic
    assert cluster.broker.topics()[OWN] == cluster.broker.topics()[OFFSETS_TOPIC]  # the worker's partitions


@MODES
def test_tasks_read_the_connector_topic_first_and_fall_back_to_the_worker_topic(config: dict[str, str]) -> None:
    cluster = SimulatedCluster(1, config)
    worker = cluster.live[0]
    worker.offset_store.set("seq", [(partition(0), {"seq": 500}), (partition(1), {"seq": 700})], 5_000)
    own = worker.worker.connector_offset_store({"offsets.storage.topic": OWN})
    assert own is not None
    own.connector_store.set("seq", [(partition(0), {"seq": 100})], 5_000)

    create(cluster)
    cluster.run_until(lambda: set(seqs(cluster)) == {0, 1}, what="both tasks wrote")
    found = seqs(cluster)
    assert min(found[0]) == 101  # the connector's topic, not the worker's 500
    assert min(found[1]) == 701  # only the worker's topic has task 1


def test_rest_offsets_read_the_combined_view_and_alter_and_reset_the_connector_topic() -> None:
    cluster = SimulatedCluster(1, DISABLED)
    worker = cluster.live[0]
    herder = worker.herder
    worker.offset_store.set("seq", [(partition(0), {"seq": 500}), (partition(1), {"seq": 700})], 5_000)
    create(cluster)
    herder.stop_connector("seq")
    cluster.run_until(lambda: not cluster.running(["seq"]), what="the connector stopped")
    own = worker.worker.connector_offset_store(herder.connector_config("seq"))
    assert own is not None
    own.connector_store.set("seq", [(partition(0), {"seq": 100})], 5_000)

    def shown() -> dict[int, int]:
        return {entry["partition"]["task"]: entry["offset"]["seq"] for entry in herder.connector_offsets("seq")}

    assert shown() == {0: 100, 1: 700}

    herder.alter_connector_offsets("seq", [{"partition": partition(1), "offset": {"seq": 42}}])
    assert stored(cluster, OWN) == {0: 100, 1: 42}
    assert stored(cluster, OFFSETS_TOPIC) == {0: 500, 1: 42}
    assert shown() == {0: 100, 1: 42}

    herder.alter_connector_offsets("seq", [{"partition": partition(0), "offset": None}])
    assert stored(cluster, OWN) == {0: None, 1: 42}
    assert stored(cluster, OFFSETS_TOPIC) == {0: None, 1: 42}  # deleted there first: no stale fallback
    assert shown() == {1: 42}

    herder.reset_connector_offsets("seq")
    assert stored(cluster, OWN) == {0: None, 1: None}
    assert stored(cluster, OFFSETS_TOPIC) == {0: None, 1: None}
    assert shown() == {}


def test_one_store_per_topic_per_worker_read_afresh_at_each_use_and_stopped_with_the_worker() -> None:
    cluster = SimulatedCluster(2, DISABLED)
    worker, other = cluster.live[0].worker, cluster.live[1].worker
    first = worker.connector_offset_store({"offsets.storage.topic": OWN})
    second = worker.connector_offset_store({"offsets.storage.topic": OWN})
    assert first is not None and second is not None
    assert first.connector_store is second.connector_store
    written = other.connector_offset_store({"offsets.storage.topic": OWN})
    assert written is not None
    written.set("seq", [(partition(0), {"seq": 7})], 5_000)  # another worker's task commits
    again = worker.connector_offset_store({"offsets.storage.topic": OWN})  # a task taken over starts here
    assert again is not None
    assert again.get("seq", [partition(0)]) == [(partition(0), {"seq": 7})]
    assert worker.connector_offset_store({"offsets.storage.topic": OFFSETS_TOPIC}) is None  # the worker's own topic
    assert worker.connector_offset_store({}) is None
    worker.stop()
    with pytest.raises(Exception, match="not started"):
        first.connector_store.get("seq", [partition(0)])
