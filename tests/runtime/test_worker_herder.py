"""The standalone herder on the simulated worker: config validation, tasks, reconfiguration, pause, failures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

import pytest

from headwater.harness import (
    MonitorableSinkConnector,
    MonitorableSourceConnector,
    MonitorableSourceTask,
    RuntimeHandles,
    SimulatedWorker,
)
from headwater.runtime import NotFoundError, State, TaskId
from headwater.sdk import CONNECTOR_ENTRY_POINT_GROUP, ConfigError, SourceTask

Make = Callable[..., SimulatedWorker]


def events(handles: RuntimeHandles, name: str) -> list[tuple[int | None, str, Any]]:
    """``(task or None, event, detail)`` of one connector's start and stop events, in order."""
    return [(t, e, d) for c, t, e, d in handles.events if c == name and e in ("start", "stop")]


def source(worker: SimulatedWorker, name: str = "src", **props: Any) -> None:
    worker.add_connector(name, MonitorableSourceConnector, {"topic": "t"}, **props)


def connector_instance(worker: SimulatedWorker, name: str) -> MonitorableSourceConnector:
    instance = worker.worker.connectors[name].instance
    assert isinstance(instance, MonitorableSourceConnector)
    return instance


# ---- config validation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"topic": "t", "tasks.max": 0}, "tasks.max"),
        ({"topic": "t", "messages.per.poll": -1}, "messages.per.poll"),
        ({"topic": "t", "errors.tolerance": "some"}, "errors.tolerance"),
        ({}, "topic"),
    ],
)
def test_invalid_config_names_the_key_and_changes_nothing(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles, props: dict[str, Any], key: str
) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=2)
    tasks = dict(worker.worker.tasks)
    config = dict(worker.herder.configs["src"])
    started = events(runtime_handles, "src")
    for name in ("src", "other"):
        with pytest.raises(ConfigError) as raised:
            worker.add_connector(name, MonitorableSourceConnector, props)
        assert raised.value.key == key
        assert key in str(raised.value)
    assert worker.herder.connectors() == ["src"]
    assert sorted(worker.worker.connectors) == ["src"]
    assert worker.herder.configs["src"] == config
    assert worker.worker.tasks == tasks
    assert [worker.task_state("src", i) for i in range(2)] == [State.RUNNING, State.RUNNING]
    assert events(runtime_handles, "src") == started
    assert events(runtime_handles, "other") == []


def test_unknown_connector_class_is_a_config_error(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    with pytest.raises(
        ConfigError,
        match="installed connectors: "
        + ", ".join(sorted(e.name for e in entry_points(group=CONNECTOR_ENTRY_POINT_GROUP))),
    ) as raised:
        worker.add_connector("src", "no-such-connector", {"topic": "t"})
    assert raised.value.key == "connector.class"
    assert "'no-such-connector'" in str(raised.value)
    assert worker.herder.connectors() == []
    assert worker.worker.connectors == {}


def test_sink_without_topics_is_rejected_before_anything_starts(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    with pytest.raises(ConfigError) as raised:
        worker.add_connector("snk", MonitorableSinkConnector)
    assert raised.value.key == "topics"
    assert worker.herder.connectors() == []
    assert worker.worker.connectors == {}
    assert events(runtime_handles, "snk") == []


def test_sink_replaced_without_topics_keeps_running(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    task = worker.task("snk")
    with pytest.raises(ConfigError):
        worker.add_connector("snk", MonitorableSinkConnector)
    assert worker.worker.tasks == {TaskId("snk", 0): task}
    assert worker.task_state("snk") is State.RUNNING
    assert worker.herder.configs["snk"]["topics"] == "in"


# ---- tasks -----------------------------------------------------------------------------------------------------


def test_tasks_max_three_runs_three_tasks(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=3, max_messages=2)
    assert worker.worker.task_ids("src") == [TaskId("src", 0), TaskId("src", 1), TaskId("src", 2)]
    assert [worker.task_state("src", i) for i in range(3)] == [State.RUNNING] * 3
    worker.advance(100)
    assert sorted((v["task"], v["seq"]) for v in worker.values("t")) == [(t, s) for t in range(3) for s in range(2)]


def test_requested_reconfiguration_with_new_task_configs_restarts_tasks_at_the_next_step(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=2)
    old = dict(worker.worker.tasks)
    instance = connector_instance(worker, "src")
    instance.config["max.messages"] = "5"
    instance.context.request_task_reconfiguration()
    assert events(runtime_handles, "src")[3:] == []
    worker.step()  # one pass (each task sends seq 0), then the herder restarts them; they resume from the commit
    assert events(runtime_handles, "src")[3:] == [
        (0, "stop", False),
        (1, "stop", False),
        (0, "start", {"saved": 0}),
        (1, "start", {"saved": 0}),
    ]
    assert worker.herder.task_configs["src"][0]["max.messages"] == "5"
    assert all(worker.worker.tasks[id] is not task for id, task in old.items())
    assert [worker.task_state("src", i) for i in range(2)] == [State.RUNNING, State.RUNNING]


def test_requested_reconfiguration_with_the_same_task_configs_restarts_nothing(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=2)
    old = dict(worker.worker.tasks)
    before = events(runtime_handles, "src")
    connector_instance(worker, "src").context.request_task_reconfiguration()
    worker.step()
    assert not worker.worker.connectors["src"].reconfiguration_requested.is_set()
    assert events(runtime_handles, "src") == before
    assert worker.worker.tasks == old
    assert all(worker.worker.tasks[id] is task for id, task in old.items())


def test_pause_and_resume_are_reflected_in_task_states(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=2)
    worker.advance(50)
    worker.pause("src")
    assert worker.herder.connector_state("src") is State.PAUSED
    assert [worker.task_state("src", i) for i in range(2)] == [State.PAUSED, State.PAUSED]
    produced = len(worker.values("t"))
    worker.advance(100)
    assert len(worker.values("t")) == produced
    worker.resume("src")
    assert worker.herder.connector_state("src") is State.RUNNING
    assert [worker.task_state("src", i) for i in range(2)] == [State.RUNNING, State.RUNNING]
    worker.advance(50)
    assert len(worker.values("t")) > produced


@pytest.mark.parametrize(("name", "task"), [("src", 1), ("src", -1), ("nope", 0)])
def test_restart_of_an_unknown_task_is_not_found(make_simulated_worker: Make, name: str, task: int) -> None:
    worker = make_simulated_worker()
    source(worker)
    running = worker.task("src")
    with pytest.raises(NotFoundError, match=name):
        worker.restart_task(name, task)
    assert worker.worker.tasks == {TaskId("src", 0): running}


def test_restart_task_replaces_only_that_task(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker()
    source(worker, tasks_max=2)
    first, second = worker.task("src", 0), worker.task("src", 1)
    worker.restart_task("src", 1)
    assert worker.task("src", 0) is first
    assert worker.task("src", 1) is not second
    assert events(runtime_handles, "src")[3:] == [(1, "stop", False), (1, "start", None)]


# ---- failures --------------------------------------------------------------------------------------------------


class FailingStartConnector(MonitorableSourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        raise RuntimeError("connector cannot reach its database")


class FailingStartTask(MonitorableSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        raise RuntimeError("task cannot open its cursor")


class FailingTaskConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return FailingStartTask


def test_connector_whose_start_raises_is_failed_and_gets_no_tasks(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("bad", FailingStartConnector, {"topic": "t", "tasks.max": 2})
    assert worker.herder.connector_state("bad") is State.FAILED
    trace = worker.herder.statuses[("bad", None)][1]
    assert trace is not None
    assert "connector cannot reach its database" in trace
    assert worker.worker.task_ids("bad") == []
    assert "bad" not in worker.herder.task_configs
    assert worker.herder.connectors() == ["bad"]
    worker.advance(100)
    assert worker.worker.task_ids("bad") == []
    assert worker.values("t") == []


def test_task_whose_start_raises_is_failed_and_still_stopped(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("bad", FailingTaskConnector, {"topic": "t"})
    assert worker.task_state("bad") is State.FAILED
    assert worker.herder.connector_state("bad") is State.RUNNING
    failure = worker.task("bad").failure
    assert isinstance(failure, RuntimeError)
    assert str(failure) == "task cannot open its cursor"
    assert runtime_handles.task("bad").names() == ["start", "stop"]
    assert runtime_handles.task("bad").events[-1] == ("stop", False)
    worker.advance(100)
    assert worker.values("t") == []
    assert runtime_handles.task("bad").names() == ["start", "stop"]


class UnmakeableTask(MonitorableSourceTask):
    def __init__(self) -> None:
        raise RuntimeError("no client for you")


class UnmakeableConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return UnmakeableTask


def test_a_task_that_cannot_be_created_is_failed_not_raised(simulated_worker: SimulatedWorker) -> None:
    simulated_worker.add_connector("bad", UnmakeableConnector, {"topic": "t"})
    assert simulated_worker.task_state("bad") is State.FAILED
    assert simulated_worker.herder.connector_state("bad") is State.RUNNING
    assert "no client for you" in (simulated_worker.herder.statuses[("bad", 0)][1] or "")


def test_a_status_listener_that_raises_does_not_stop_the_task_from_stopping(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker()
    source(worker, "src")
    worker.run_until(lambda: worker.task_state("src") is State.RUNNING, what="the task running")
    task = worker.worker.tasks[TaskId("src", 0)]

    def closing_status_store(id: TaskId, state: State, trace: str | None) -> None:
        raise RuntimeError("the status store's producer is closed")

    task._listener = closing_status_store
    worker.delete_connector("src")
    assert task.state is State.STOPPED and task.stop_delivered is True
    assert ("stop" in [e for _, e, _ in events(runtime_handles, "src")]) and "could not be recorded" in caplog.text
