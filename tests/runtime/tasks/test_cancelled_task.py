"""A task cancelled after the graceful timeout (its ``start`` still running, say a SparkSession being made) reports
no state any more: a new task of the same id may already run on another worker, and the zombie's late RUNNING must
not overwrite that task's status (seen in CI: a distributed Spark sink whose revoked task finished starting later)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask

RELEASE = threading.Event()
RETURNED = threading.Event()


class SlowTaskSource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return SlowStartTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


class SlowStartTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        RELEASE.wait(60)
        RETURNED.set()

    def poll(self) -> Sequence[SourceRecord]:
        return []


def test_a_cancelled_task_reports_nothing_once_its_start_returns() -> None:
    reported: list[tuple[str, int | None, State]] = []
    worker = Worker(
        {"task.shutdown.graceful.timeout.ms": 100},
        MemoryTransport(MemoryBroker()),
        MemoryOffsetStore(),
        listener=lambda connector, task, state, trace: reported.append((connector, task, state)),
    )
    try:
        config = {"connector.class": f"{__name__}:SlowTaskSource", "topic": "t"}
        worker.start_connector("c", config)
        id = TaskId("c", 0)
        task = worker.start_task(id, {"topic": "t"})
        assert task is not None
        worker.stop_tasks([id])
        assert worker.cancelled == [id]
        RELEASE.set()
        assert RETURNED.wait(30)
        deadline = time.monotonic() + 30
        while task.stop_delivered is None and time.monotonic() < deadline:  # its thread runs on to the end
            time.sleep(0.01)
        assert task.state is State.STOPPED, "the zombie ran to its end"
        task_states = [state for connector, task, state in reported if task == 0]
        assert State.RUNNING not in task_states, task_states
    finally:
        RELEASE.set()
        worker.stop()
