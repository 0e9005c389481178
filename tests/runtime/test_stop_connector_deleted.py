"""stop(connector_deleted) (seed KIP-901): who is told what, and in which order (kafka-connect-runtime.md §5c)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from headwater.harness import (
    MonitorableSinkConnector,
    MonitorableSourceConnector,
    RuntimeHandles,
    SimulatedWorker,
)
from headwater.runtime.clock import VirtualClock
from headwater.runtime.herder import NotFoundError, StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask

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
        {"task.shutdown.graceful.timeout.ms": 50, "key.converter": "json", "value.converter": "json"},
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
