"""stop(connector_deleted) (KIP-901): who is told what, and in which order, whatever state the deleted connector
is in."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from headwater.harness import (
    MonitorableSinkConnector,
    MonitorableSourceConnector,
    RuntimeHandles,
    SimulatedWorker,
)
from headwater.runtime.clock import VirtualClock
from headwater.runtime.errors import NotFoundError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask, hookimpl
from support.connectors import ALLOWED_MODULES

Make = Callable[..., SimulatedWorker]


def stops(handles: RuntimeHandles) -> list[tuple[str, int | None, bool]]:
    return [(c, t, d) for c, t, e, d in handles.events if e == "stop"]


def test_delete_tells_every_task_then_the_connector_exactly_once(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t", "tasks.max": 2})
    worker.advance(100)
    worker.delete_connector("src")
    assert stops(runtime_handles) == [("src", 0, True), ("src", 1, True), ("src", None, True)]
    assert worker.herder.connectors() == []


def test_second_delete_is_not_found(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t"})
    worker.delete_connector("src")
    try:
        worker.delete_connector("src")
    except NotFoundError as error:
        assert "src" in str(error)
    else:
        raise AssertionError("a second delete must fail")


def test_delete_keeps_source_offsets(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 1000})
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t", "max.messages": 2})
    worker.advance(100)
    worker.delete_connector("src")
    worker.assert_source_offset("src", {"task.id": "src-0"}, {"saved": 1})


def test_plain_stop_restart_reconfigure_and_pause_to_stop_give_false(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t"})
    worker.advance(20)
    worker.restart_task("src", 0)
    worker.restart_connector("src")
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t", "tasks.max": 2})
    worker.stop_connector("src")
    flags = {deleted for _, _, deleted in stops(runtime_handles)}
    assert flags == {False}
    assert len(stops(runtime_handles)) == 1 + 2 + 2 + 3


def test_sink_closes_its_partitions_before_stop_true(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker()
    worker.produce("in", {"n": 1})
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    worker.advance(50)
    worker.delete_connector("snk")
    names = runtime_handles.task("snk").names()
    assert names[-1] == "stop"
    assert names.index("pre_commit") < names.index("close") < names.index("stop")
    assert ("stop", True) in runtime_handles.task("snk").events


class PlainStopTask(SourceTask):
    stopped = 0

    def start(self, config: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        return []

    def stop(self) -> None:
        PlainStopTask.stopped += 1


class PlainStopConnector(SourceConnector):
    stopped = 0

    def start(self, config: Any) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return PlainStopTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def stop(self) -> None:
        PlainStopConnector.stopped += 1


def test_a_plugin_with_only_plain_stop_is_stopped_once_on_delete(make_simulated_worker: Make) -> None:
    PlainStopTask.stopped = PlainStopConnector.stopped = 0
    worker = make_simulated_worker()
    worker.add_connector("plain", PlainStopConnector)
    worker.advance(20)
    worker.delete_connector("plain")
    assert (PlainStopTask.stopped, PlainStopConnector.stopped) == (1, 1)
    assert [(h, d["connector_deleted"]) for h, _, d in worker.hook_calls if h == "stop"] == [
        ("stop", True),
        ("stop", True),
    ]


class BlockingTask(SourceTask):
    release = threading.Event()
    entered = threading.Event()

    def start(self, config: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        BlockingTask.entered.set()
        BlockingTask.release.wait(30)
        return []


class BlockingConnector(PlainStopConnector):
    def task_class(self) -> type[SourceTask]:
        return BlockingTask


def test_task_blocked_past_the_graceful_timeout_is_cancelled_and_not_told(runtime_handles: RuntimeHandles) -> None:
    BlockingTask.release.clear()
    BlockingTask.entered.clear()
    worker = Worker(
        {
            "task.shutdown.graceful.timeout.ms": 50,
            "key.converter": "json",
            "value.converter": "json",
            **ALLOWED_MODULES,
        },
        MemoryTransport(MemoryBroker()),
        MemoryOffsetStore(),
        clock=VirtualClock(),
        threaded=True,
    )
    herder = StandaloneHerder(worker)
    herder.put_connector_config("blocked", {"connector.class": f"{__name__}:BlockingConnector"})
    assert BlockingTask.entered.wait(10), "the task thread should have polled"
    (task,) = worker.tasks.values()
    herder.delete_connector("blocked")
    assert task.stop_delivered is None, "stop(connector_deleted=True) was not delivered to the blocked task"
    assert worker.cancelled == [task.id]
    BlockingTask.release.set()
    worker.stop()


# ---- a delete reaches the connector whatever its state -------------------------------------------------------------


class CleanupTask(SourceTask):
    """Fails its first poll when its config says ``fail.poll``."""

    def start(self, config: Any) -> None:
        self.fail = config.get("fail.poll") == config.get("task")

    def poll(self) -> list[SourceRecord]:
        if self.fail:
            raise RuntimeError("poll failed")
        return []


class CleanupSource(SourceConnector):
    """Records the config of every start; ``fail_start`` makes ``start`` raise (after recording) and
    ``fail_stop`` makes ``stop`` raise."""

    starts: ClassVar[list[dict[str, str]]] = []
    fail_start = False
    fail_stop = False

    def start(self, config: Any) -> None:
        CleanupSource.starts.append(dict(config))
        self.config = dict(config)
        if CleanupSource.fail_start:
            raise RuntimeError("the database is gone")

    def task_class(self) -> type[SourceTask]:
        return CleanupTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task": str(task)} for task in range(max_tasks)]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if CleanupSource.fail_stop and connector_deleted:
            raise RuntimeError("cannot drop the slot")


CLEANUP = {"connector.class": f"{__name__}:CleanupSource", "tasks.max": 2, "marker": "m"}


@pytest.fixture
def cleanup_source() -> Iterator[type[CleanupSource]]:
    CleanupSource.starts.clear()
    CleanupSource.fail_start = CleanupSource.fail_stop = False
    yield CleanupSource
    CleanupSource.fail_start = CleanupSource.fail_stop = False


def stops_since(worker: SimulatedWorker, mark: int) -> list[tuple[str, bool]]:
    """(owner, connector_deleted) of every stop hook call since ``mark`` calls were recorded."""
    return [(owner, args["connector_deleted"]) for hook, owner, args in worker.hook_calls[mark:] if hook == "stop"]


def assert_gone(worker: SimulatedWorker, name: str) -> None:
    assert worker.herder.connectors() == []
    assert worker.herder.status_store.connector(name) is None
    assert not worker.worker.connectors and not worker.worker.tasks


def test_delete_of_a_stopped_connector_starts_an_instance_with_its_config_to_tell_it(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource]
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, CLEANUP)
    worker.advance(20)
    worker.stop_connector("src")
    mark, starts = len(worker.hook_calls), len(cleanup_source.starts)
    worker.delete_connector("src")
    assert stops_since(worker, mark) == [("src", True)], "no task runs, so only the connector is told"
    (fresh,) = cleanup_source.starts[starts:]
    assert fresh["marker"] == "m" and fresh["name"] == "src"
    assert_gone(worker, "src")
    assert worker.worker.cleanup_errors == []


def test_delete_of_a_paused_connector_tells_its_paused_tasks_then_the_connector(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource]
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, CLEANUP)
    worker.advance(20)
    worker.pause("src")
    worker.advance(20)
    mark, starts = len(worker.hook_calls), len(cleanup_source.starts)
    worker.delete_connector("src")
    assert stops_since(worker, mark) == [("src-0", True), ("src-1", True), ("src", True)]
    assert cleanup_source.starts[starts:] == [], "the paused instance is told; none is started"
    assert_gone(worker, "src")


def test_delete_of_a_connector_that_failed_to_start_tells_that_instance(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource]
) -> None:
    cleanup_source.fail_start = True
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, CLEANUP)
    worker.advance(20)
    assert worker.herder.connector_state("src") is State.FAILED
    mark = len(worker.hook_calls)
    worker.delete_connector("src")
    assert stops_since(worker, mark) == [("src", True)]
    assert len(cleanup_source.starts) == 1, "the failed instance is told; no other is started"
    assert_gone(worker, "src")


def test_delete_after_a_task_failed_tells_the_connector_and_the_tasks_still_running(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource]
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, {**CLEANUP, "fail.poll": "1"})
    worker.advance(20)
    assert worker.task_state("src", 1) is State.FAILED
    assert stops_since(worker, 0) == [("src-1", False)], "a failed task is stopped when it fails"
    mark = len(worker.hook_calls)
    worker.delete_connector("src")
    assert stops_since(worker, mark) == [("src-0", True), ("src", True)]
    assert len(cleanup_source.starts) == 1
    assert_gone(worker, "src")


def test_delete_goes_through_when_the_instance_started_to_be_told_fails_and_says_so(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource], caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, CLEANUP)
    worker.advance(20)
    worker.stop_connector("src")
    cleanup_source.fail_start = True
    mark = len(worker.hook_calls)
    with caplog.at_level(logging.ERROR, "headwater.runtime.worker"):
        worker.delete_connector("src")
    assert stops_since(worker, mark) == [("src", True)], "the instance whose start raised is told all the same"
    assert_gone(worker, "src")
    ((name, why),) = worker.worker.cleanup_errors
    assert name == "src" and "failed in start" in why and "the database is gone" in why
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("connector src deleted, but what it provisioned may remain" in e and "the database is gone" in e
               for e in errors), errors  # fmt: skip


def test_a_stop_that_raises_on_delete_is_logged_and_kept(
    make_simulated_worker: Make, cleanup_source: type[CleanupSource], caplog: pytest.LogCaptureFixture
) -> None:
    cleanup_source.fail_stop = True
    worker = make_simulated_worker()
    worker.add_connector("src", CleanupSource, CLEANUP)
    worker.advance(20)
    with caplog.at_level(logging.ERROR, "headwater.runtime.worker"):
        worker.delete_connector("src")
    assert_gone(worker, "src")
    ((name, why),) = worker.worker.cleanup_errors
    assert name == "src" and "cannot drop the slot" in why
    assert "connector src deleted, but what it provisioned may remain" in caplog.text


def test_a_connector_whose_class_no_longer_loads_is_deleted_saying_nothing_was_told(
    make_simulated_worker: Make, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker()
    with caplog.at_level(logging.ERROR, "headwater.runtime.worker"):
        worker.worker.delete_connector("gone", {"connector.class": "headwater_no_such_module:Gone"})
    ((name, why),) = worker.worker.cleanup_errors
    assert name == "gone" and "not delivered" in why and "headwater_no_such_module" in why
    assert "connector gone deleted, but what it provisioned may remain" in caplog.text
