"""Statuses, tasks, restarts (KIP-745), pause, resume and stop (KIP-875) over HTTP, on the in-memory worker; a
standalone worker's statuses on the real broker, naming it by its REST address."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from headwater.harness.monitorable import MonitorableSourceConnector, MonitorableSourceTask, RuntimeHandles
from headwater.sdk import ConfigDef, SourceTask, Type
from support.rest_worker import MemoryRestWorker, RestWorker, source_config, wait_until


class FailingSourceTask(MonitorableSourceTask):
    """Fails at start while its config says ``fail.task=<its number>``."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        if config.get("fail.task") == config["task.id"]:
            raise RuntimeError(f"task {config['task.id']} was told to fail")


class FailingSource(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return FailingSourceTask

    def config_def(self) -> ConfigDef:
        return super().config_def().define("fail.task", Type.STRING, "", documentation="The task that fails.")


FAILING = f"{__name__}:FailingSource"


def starts(handles: RuntimeHandles, name: str, task: int | None) -> int:
    return sum(1 for c, t, event, _ in handles.events if (c, t, event) == (name, task, "start"))


@pytest.mark.kafka
def test_status_and_tasks_of_a_running_connector(rest_worker: RestWorker, unique_name: str) -> None:
    rest_worker.create(unique_name, source_config("t", tasks_max=2))
    rest_worker.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    status = rest_worker.status(unique_name)
    worker_id = rest_worker.url.removeprefix("http://")
    assert worker_id == rest_worker.standalone.worker.worker_id
    assert status == {
        "name": unique_name,
        "connector": {"state": "RUNNING", "worker_id": worker_id, "version": "0.0.0"},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": worker_id, "version": "0.0.0"},
            {"id": 1, "state": "RUNNING", "worker_id": worker_id, "version": "0.0.0"},
        ],
        "type": "source",
    }
    tasks = rest_worker.http.get(f"/connectors/{unique_name}/tasks").json()
    assert [task["id"] for task in tasks] == [{"connector": unique_name, "task": t} for t in (0, 1)]
    assert tasks[1]["config"]["task.id"] == "1"
    task = rest_worker.http.get(f"/connectors/{unique_name}/tasks/1/status")
    assert task.json() == {"id": 1, "state": "RUNNING", "worker_id": worker_id, "version": "0.0.0"}


def test_unknown_task_status_is_not_found(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("t"))
    response = live_rest.http.get(f"/connectors/{unique_name}/tasks/7/status")
    assert response.status_code == 404
    assert response.json()["message"] == f"No status found for task {unique_name}-7"
    assert live_rest.http.get(f"/connectors/{unique_name}/tasks/x/status").status_code == 404


def test_failed_task_shows_its_trace(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, {**source_config("t"), "connector.class": FAILING, "fail.task": "0"})
    live_rest.wait_for_states(unique_name, "RUNNING", ["FAILED"])
    task = live_rest.http.get(f"/connectors/{unique_name}/tasks/0/status").json()
    assert task["state"] == "FAILED"
    assert "task 0 was told to fail" in task["trace"]


@pytest.mark.parametrize(
    ("query", "code", "connector_starts"),
    [("", 204, 2), ("?onlyFailed=true", 202, 1)],
    ids=["plain-restarts-the-connector-instance-only", "only-failed-without-failures-restarts-nothing"],
)
def test_restart_without_tasks(
    live_rest: MemoryRestWorker,
    unique_name: str,
    runtime_handles: RuntimeHandles,
    query: str,
    code: int,
    connector_starts: int,
) -> None:
    live_rest.create(unique_name, source_config("t"))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    response = live_rest.http.post(f"/connectors/{unique_name}/restart{query}")
    assert response.status_code == code
    if code == 204:
        assert response.content == b""
    else:
        assert response.json()["connector"]["state"] == "RUNNING"
    assert live_rest.states(unique_name) == ("RUNNING", ["RUNNING"])
    assert [starts(runtime_handles, unique_name, t) for t in (None, 0)] == [connector_starts, 1]


def test_restart_with_tasks_answers_202_with_restarting_states(
    live_rest: MemoryRestWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    live_rest.create(unique_name, source_config("t", tasks_max=2))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    response = live_rest.http.post(f"/connectors/{unique_name}/restart", params={"includeTasks": "true"})
    assert response.status_code == 202
    body = response.json()
    assert body["connector"]["state"] == "RESTARTING"
    assert [task["state"] for task in body["tasks"]] == ["RESTARTING", "RESTARTING"]
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    assert [starts(runtime_handles, unique_name, t) for t in (None, 0, 1)] == [2, 2, 2]


def test_restart_only_failed_tasks(
    live_rest: MemoryRestWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    config = {**source_config("t", tasks_max=2), "connector.class": FAILING, "fail.task": "1"}
    live_rest.create(unique_name, config)
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "FAILED"])
    response = live_rest.http.post(
        f"/connectors/{unique_name}/restart", params={"includeTasks": "true", "onlyFailed": "true"}
    )
    assert response.status_code == 202
    body = response.json()
    assert body["connector"]["state"] == "RUNNING"
    assert [task["state"] for task in body["tasks"]] == ["RUNNING", "RESTARTING"]
    wait_until(lambda: starts(runtime_handles, unique_name, 1) == 2, "task 1 started again")  # start() is on its thread
    assert [starts(runtime_handles, unique_name, t) for t in (None, 0, 1)] == [1, 1, 2]


def test_restart_one_task(live_rest: MemoryRestWorker, unique_name: str, runtime_handles: RuntimeHandles) -> None:
    live_rest.create(unique_name, source_config("t", tasks_max=2))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    assert live_rest.http.post(f"/connectors/{unique_name}/tasks/1/restart").status_code == 204
    wait_until(lambda: starts(runtime_handles, unique_name, 1) == 2, "task 1 started again")  # start() is on its thread
    assert [starts(runtime_handles, unique_name, t) for t in (None, 0, 1)] == [1, 1, 2]
    missing = live_rest.http.post(f"/connectors/{unique_name}/tasks/5/restart")
    assert missing.status_code == 404
    assert missing.json()["message"] == f"Task {unique_name}-5 not found"


def test_pause_and_resume(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("t"))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    for _ in range(2):  # idempotent
        assert live_rest.http.put(f"/connectors/{unique_name}/pause").status_code == 202
    live_rest.wait_for_states(unique_name, "PAUSED", ["PAUSED"])
    assert live_rest.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])


def test_stop_leaves_no_tasks_and_resume_starts_them_again(
    live_rest: MemoryRestWorker, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    live_rest.create(unique_name, source_config("t", tasks_max=2))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    for _ in range(2):  # idempotent
        response = live_rest.http.put(f"/connectors/{unique_name}/stop")
        assert response.status_code == 204
    assert live_rest.states(unique_name) == ("STOPPED", [])
    assert live_rest.http.get(f"/connectors/{unique_name}/tasks").json() == []
    assert live_rest.http.get(f"/connectors/{unique_name}").json()["tasks"] == []
    assert live_rest.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING", "RUNNING"])
    stops = [(t, deleted) for c, t, event, deleted in runtime_handles.events if event == "stop" and c == unique_name]
    assert sorted(stops, key=str) == sorted([(0, False), (1, False), (None, False)], key=str)


@pytest.mark.parametrize("initial", ["PAUSED", "STOPPED"])
def test_initial_state(live_rest: MemoryRestWorker, unique_name: str, initial: str) -> None:
    """No task until resumed: Kafka Connect's herders ask only a STARTED connector for task configs (KIP-980)."""
    live_rest.create(unique_name, source_config("t"), initial_state=initial)
    live_rest.wait_for_states(unique_name, initial, [])
    assert live_rest.http.get(f"/connectors/{unique_name}/tasks").json() == []
    assert live_rest.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])


def test_a_stopped_connector_paused_has_no_task_until_resumed(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("t"), initial_state="STOPPED")
    assert live_rest.http.put(f"/connectors/{unique_name}/pause").status_code == 202
    live_rest.wait_for_states(unique_name, "PAUSED", [])
    assert live_rest.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])


def test_unknown_initial_state_is_a_bad_request(live_rest: MemoryRestWorker, unique_name: str) -> None:
    response = live_rest.http.post(
        "/connectors", json={"name": unique_name, "config": source_config("t"), "initial_state": "ASLEEP"}
    )
    assert response.status_code == 400
    assert "initial_state" in response.json()["message"]
    assert live_rest.http.get("/connectors").json() == []
