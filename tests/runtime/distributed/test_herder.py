"""The distributed herder over REST: any worker of the cluster serves every request, writes go through the config
topic, and what runs where follows the slots Kafka's group coordinator hands out. Workers run on threads of the
test process, so the monitorable connectors' registry shows what each task saw."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headwater.harness.kafka_worker import RawRecords
from headwater.harness.monitorable import MonitorableSourceConnector, RuntimeHandles
from headwater.runtime.distributed import DistributedHerder
from support.rest_worker import RestWorker, sink_config, source_config, wait_until

pytestmark = pytest.mark.kafka

MakeWorker = Callable[..., RestWorker]


def herder(worker: RestWorker) -> DistributedHerder:
    found = worker.herder
    assert isinstance(found, DistributedHerder)
    return found


def running_tasks(worker: RestWorker, name: str) -> dict[int, str]:
    """Task -> worker id of the connector's RUNNING tasks, as ``worker`` answers."""
    response = worker.http.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return {}
    return {task["id"]: task["worker_id"] for task in response.json()["tasks"] if task["state"] == "RUNNING"}


def wait_for_tasks(worker: RestWorker, name: str, count: int) -> dict[int, str]:
    return dict(wait_until(lambda: len(found := running_tasks(worker, name)) == count and found, f"{count} tasks"))


def spread_tasks(worker: RestWorker, name: str) -> dict[int, str]:
    """Wait until the connector's two tasks run on two workers, and return task -> worker id. The first worker to
    read new task configs may start both, and one moves at the next rebalance: a task moving while its connector
    is deleted was stopped with ``connector_deleted=False`` and is not running to be told."""
    return dict(
        wait_until(lambda: len(set((found := running_tasks(worker, name)).values())) == 2 and found, "tasks spread")
    )


def running_source(make_worker: MakeWorker, topic: str) -> tuple[RestWorker, RestWorker]:
    """Two workers, and connector ``src`` running two tasks on them, created through the first."""
    a, b = make_worker(), make_worker()
    a.create("src", source_config(topic, tasks_max=2))
    wait_for_tasks(a, "src", 2)
    return a, b


def stops(handles: RuntimeHandles, name: str) -> list[tuple[int | None, Any]]:
    """(task or None for the connector, connector_deleted) of each stop the connector's instances got."""
    return [
        (task, detail) for connector, task, event, detail in handles.events if connector == name and event == "stop"
    ]


def test_any_worker_serves_what_another_wrote(make_worker: MakeWorker, unique_name: str) -> None:
    a, b = make_worker(), make_worker()
    a.create("src", source_config(unique_name, tasks_max=2))
    response = b.http.get("/connectors/src")
    assert response.status_code == 200, response.text
    assert response.json()["config"]["topic"] == unique_name
    owners = wait_for_tasks(b, "src", 2)
    assert set(owners.values()) <= {a.standalone.worker.worker_id, b.standalone.worker.worker_id}
    assert b.http.post("/connectors", json={"name": "src", "config": source_config("x")}).status_code == 409
    assert len(b.http.get("/connectors/src/tasks").json()) == 2


def test_tasks_and_connectors_spread_over_the_workers(make_worker: MakeWorker, unique_name: str) -> None:
    a, b = make_worker(), make_worker()
    for name in ("one", "two"):
        a.create(name, source_config(unique_name, tasks_max=2))
    ids = [a.standalone.worker.worker_id, b.standalone.worker.worker_id]

    def tasks_per_worker() -> list[int]:
        owners = [*running_tasks(a, "one").values(), *running_tasks(a, "two").values()]
        return [owners.count(worker) for worker in ids]

    # a worker that reads the new configs first may get every slot at first; the next rebalance evens them out
    wait_until(lambda: tasks_per_worker() == [2, 2], "two tasks on each worker")
    wait_until(lambda: len(herder(a).member.applied) == len(herder(b).member.applied) == 1, "one connector each")


def test_reconfiguration_regenerates_task_configs(
    make_worker: MakeWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    a, b = running_source(make_worker, unique_name)
    response = b.http.put("/connectors/src/config", json=source_config(unique_name, tasks_max=3, max_messages=5))
    assert response.status_code == 200, response.text
    wait_until(lambda: len(a.http.get("/connectors/src/tasks").json()) == 3, "three task configs")
    tasks = a.http.get("/connectors/src/tasks").json()
    assert {task["config"]["max.messages"] for task in tasks} == {"5"}
    wait_for_tasks(a, "src", 3)
    assert (0, False) in stops(runtime_handles, "src") and (1, False) in stops(runtime_handles, "src")
    assert not [stop for stop in stops(runtime_handles, "src") if stop[1]], "nothing was deleted"


def test_pause_resume_and_stop_through_any_worker(make_worker: MakeWorker, unique_name: str) -> None:
    a, b = running_source(make_worker, unique_name)
    assert b.http.put("/connectors/src/pause").status_code == 202
    a.wait_for_states("src", "PAUSED", ["PAUSED", "PAUSED"])
    assert a.http.put("/connectors/src/resume").status_code == 202
    b.wait_for_states("src", "RUNNING", ["RUNNING", "RUNNING"])
    assert b.http.put("/connectors/src/stop").status_code == 204
    a.wait_for_states("src", "STOPPED", [])
    assert a.http.get("/connectors/src/tasks").json() == []
    assert a.http.put("/connectors/src/resume").status_code == 202
    b.wait_for_states("src", "RUNNING", ["RUNNING", "RUNNING"])


def test_restart_requests_reach_the_workers_running_the_tasks(
    make_worker: MakeWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    a, b = running_source(make_worker, unique_name)
    # the first worker to read the new config may start both tasks, and one moves at the next rebalance: a start
    # that is no restart; count from when each worker runs one (balanced, so nothing moves any more)
    wait_until(lambda: len(set(running_tasks(a, "src").values())) == 2, "one task on each worker")

    def starts(task: int | None) -> int:
        return sum(1 for c, t, event, _ in runtime_handles.events if c == "src" and t == task and event == "start")

    before = {task: starts(task) for task in (None, 0, 1)}
    assert b.http.post("/connectors/src/tasks/1/restart").status_code == 204
    wait_until(lambda: starts(1) == before[1] + 1, "task 1 started again")
    assert starts(0) == before[0]
    response = a.http.post("/connectors/src/restart", params={"includeTasks": "true"})
    assert response.status_code == 202, response.text
    assert response.json()["connector"]["state"] == "RESTARTING"
    wait_until(
        lambda: {task: starts(task) - before[task] for task in before} == {None: 1, 0: 1, 1: 2},
        "connector and both tasks started again",
    )
    assert b.http.post("/connectors/src/tasks/7/restart").status_code == 404
    assert b.http.post("/connectors/nope/restart").status_code == 404


def test_delete_through_a_worker_stops_the_owners_tasks_as_deleted(
    make_worker: MakeWorker, unique_name: str, runtime_handles: RuntimeHandles, raw_records: RawRecords
) -> None:
    a, b, c = make_worker(), make_worker(), make_worker()
    a.create("src", source_config(unique_name, tasks_max=2))
    owners = spread_tasks(a, "src")
    wait_until(lambda: a.topics("src") == [unique_name], "the topic recorded as active")
    idle = next(w for w in (a, b, c) if w.standalone.worker.worker_id not in owners.values())
    assert idle.http.delete("/connectors/src").status_code == 204
    # stop(False) may come before, from a task moving while the cluster settled; stop(True) comes once to each
    deleted = [(0, True), (1, True), (None, True)]
    wait_until(lambda: sorted((s for s in stops(runtime_handles, "src") if s[1]), key=str) == deleted, "stops")
    for worker in (a, b, c):
        wait_until(lambda w=worker: w.topics("src") == [], "the active topics reset")
        wait_until(lambda w=worker: w.http.get("/connectors/src/status").status_code == 404, "the statuses gone")
    assert idle.http.get("/connectors").json() == []
    assert idle.http.delete("/connectors/src").status_code == 404
    topic_key = f"status-topic-{unique_name}:connector-src".encode()
    last = [value for _, key, value in raw_records(f"{unique_name}-status") if key == topic_key][-1]
    assert last is None, "the active topic is tombstoned in the status topic"


class FailingSource(MonitorableSourceConnector):
    """A monitorable source whose ``start`` raises (after recording it)."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        raise RuntimeError("cannot reach the source")


def test_delete_tells_stopped_paused_and_failed_connectors(
    make_worker: MakeWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    a, b = make_worker(), make_worker()
    a.create("stopped", source_config(unique_name, tasks_max=2))
    wait_for_tasks(a, "stopped", 2)
    assert b.http.put("/connectors/stopped/stop").status_code == 204
    a.wait_for_states("stopped", "STOPPED", [])
    a.create("failed", {**source_config(unique_name), "connector.class": f"{__name__}:FailingSource"})
    a.create("paused", source_config(unique_name, tasks_max=2))
    spread_tasks(a, "paused")  # the only tasks of the cluster, one on each worker: none moves any more
    assert b.http.put("/connectors/paused/pause").status_code == 202
    a.wait_for_states("paused", "PAUSED", ["PAUSED", "PAUSED"])
    a.wait_for_states("failed", "FAILED", [])
    assert not [stop for name in ("stopped", "paused", "failed") for stop in stops(runtime_handles, name) if stop[1]]
    mark = len(runtime_handles.events)
    for name in ("stopped", "paused", "failed"):
        assert b.http.delete(f"/connectors/{name}").status_code == 204
    expected = {"stopped": [(None, True)], "paused": [(0, True), (1, True), (None, True)], "failed": [(None, True)]}
    for name, told in expected.items():
        wait_until(lambda n=name, t=told: sorted((s for s in stops(runtime_handles, n) if s[1]), key=str) == t, name)
    since = [(c, t, event) for c, t, event, _ in runtime_handles.events[mark:] if c == "stopped"]
    assert since == [("stopped", None, "start"), ("stopped", None, "stop")], "an instance started to be told"
    for name in expected:
        wait_until(lambda n=name: a.http.get(f"/connectors/{n}/status").status_code == 404, f"{name}'s statuses gone")
    assert all(not herder(w).worker.cleanup_errors for w in (a, b))


def test_topic_reset_through_another_worker_clears_what_the_owners_noted(
    make_worker: MakeWorker, unique_name: str
) -> None:
    a, b = running_source(make_worker, unique_name)
    spread_tasks(a, "src")  # settled: a task that moved after the reset would be a new one, not told
    wait_until(lambda: b.topics("src") == [unique_name], "the topic recorded as active")
    assert b.http.put("/connectors/src/topics/reset").status_code == 202

    def forgotten() -> bool:
        tasks = [task for w in (a, b) for task in herder(w).member.running_tasks()]
        return len(tasks) == 2 and all(not getattr(task, "active_topics", {1}) for task in tasks)

    wait_until(forgotten, "every owner forgot the topic")
    for worker in (a, b):  # each worker reads the tombstones from the status topic in its own time
        wait_until(lambda w=worker: w.topics("src") == [], "the reset seen by every worker")


def test_offsets_of_a_stopped_connector_through_any_worker(make_worker: MakeWorker, unique_name: str) -> None:
    a, b = make_worker(), make_worker()
    a.create("src", source_config(unique_name, tasks_max=1))
    partition = {"task.id": "src-0"}
    b.wait_for_offsets("src", [{"partition": partition, "offset": {"saved": 2}}])
    assert a.http.delete("/connectors/src/offsets").status_code == 400, "only a STOPPED connector's"
    assert a.http.put("/connectors/src/stop").status_code == 204
    body = {"offsets": [{"partition": partition, "offset": {"saved": 7}}]}
    wait_until(lambda: b.http.patch("/connectors/src/offsets", json=body).status_code == 200, "offsets altered")
    a.wait_for_offsets("src", [{"partition": partition, "offset": {"saved": 7}}])
    assert b.http.delete("/connectors/src/offsets").status_code == 200
    a.wait_for_offsets("src", [])


def test_sink_tasks_consume_on_whichever_worker_runs_them(
    make_worker: MakeWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    a, b = make_worker(), make_worker()
    sink = f"snk-{unique_name}"  # its group connect-<name> is this test's alone
    a.create("src", source_config(unique_name, tasks_max=2, max_messages=3))
    b.create(sink, sink_config(unique_name, tasks_max=2))
    wait_for_tasks(a, sink, 2)

    def received() -> int:
        return sum(len(handle.records) for (name, _), handle in runtime_handles.tasks.items() if name == sink)

    wait_until(lambda: received() == 6, "the six records at the sink")


def test_patches_through_two_workers_keep_both_changes(make_worker: MakeWorker, unique_name: str) -> None:
    a, b = running_source(make_worker, unique_name)
    first = a.http.patch("/connectors/src/config", json={"messages.per.poll": "3"})
    second = b.http.patch("/connectors/src/config", json={"max.messages": "1000"})
    assert (first.status_code, second.status_code) == (200, 200), (first.text, second.text)
    for worker in (a, b):
        wait_until(
            lambda w=worker: (
                {
                    k: v
                    for k, v in w.http.get("/connectors/src/config").json().items()
                    if k in ("messages.per.poll", "max.messages")
                }
                == {"messages.per.poll": "3", "max.messages": "1000"}
            ),
            "both changes read back",
        )


def test_a_logger_level_with_cluster_scope_goes_through_the_config_topic(make_worker: MakeWorker) -> None:
    a, b = make_worker(), make_worker()
    name = "tests.distributed.cluster_scope"
    logger = logging.getLogger(name)
    try:
        response = b.http.put(f"/admin/loggers/{name}", json={"level": "ERROR"}, params={"scope": "cluster"})
        assert response.status_code == 204, response.text
        wait_until(lambda: logger.level == logging.ERROR, "the level applied from the config topic")
        wait_until(
            lambda: any(herder(w).loggers.level(name)["last_modified"] is not None for w in (a, b)),  # type: ignore[index]
            "a worker recording the change",
        )
        bad = a.http.put(f"/admin/loggers/{name}", json={"level": "LOUDER"}, params={"scope": "cluster"})
        assert bad.status_code == 400 and "'LOUDER'" in bad.json()["message"], bad.text
    finally:
        logger.setLevel(logging.NOTSET)
