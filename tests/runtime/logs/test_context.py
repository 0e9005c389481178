"""Every line logged while a connector's or a task's code runs says which, as Kafka Connect's MDC context does
(``LoggingContext``: ``[name|worker]``, ``[name|task-0]``, ``[name|task-0|offsets]``), whoever logs it: the runtime
or the connector's own code; lines of other threads carry none, never a stale one."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.logs.context import (
    CONNECTOR_CONTEXT,
    LOG_FORMAT,
    ConnectorContextFilter,
    Scope,
    configure_logging,
    for_task,
    prefix_for,
)
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import RetriableError, SourceConnector, SourceRecord, SourceTask, hookimpl

connector_log = logging.getLogger("chatty.connector")
task_log = logging.getLogger("chatty.task")
POLLED = threading.Event()


class ChattySource(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        connector_log.info("connector starting")
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return ChattyTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        connector_log.info("connector making task configs")
        return [dict(self.config)]

    def stop(self) -> None:
        connector_log.info("connector stopping")


class ChattyTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        task_log.info("task starting")
        self.polls = 0

    def poll(self) -> Sequence[SourceRecord]:
        self.polls += 1
        if self.polls == 1:
            helper = threading.Thread(target=task_log.info, args=("from a thread the task started",))
            helper.start()
            helper.join()
            raise RetriableError("not yet")
        if self.polls == 2:
            task_log.info("task polling")
            POLLED.set()
            return [SourceRecord({"p": 0}, {"n": 1}, "chatty", "one")]
        return []

    @hookimpl
    def offsets_committed(self, offsets: Any) -> None:
        task_log.info("offsets committed")

    def stop(self) -> None:
        task_log.info("task stopping")


def contexts(caplog: pytest.LogCaptureFixture, message: str) -> list[str]:
    found: list[str] = [getattr(r, "connector_context", "?") for r in caplog.records if message in r.getMessage()]
    assert found, f"nothing logged {message!r}"
    return found


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(ConnectorContextFilter())
    return caplog


def test_prefixes_are_kafka_connects() -> None:
    assert prefix_for("my-connector", Scope.WORKER) == "[my-connector|worker] "
    assert prefix_for("my-connector", Scope.TASK, 0) == "[my-connector|task-0] "
    assert prefix_for("my-connector", Scope.OFFSETS, 3) == "[my-connector|task-3|offsets] "


def test_a_threaded_tasks_lines_carry_its_context_and_other_threads_lines_none(
    captured: pytest.LogCaptureFixture,
) -> None:
    POLLED.clear()
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    try:
        worker.start_connector("chatty", {"connector.class": f"{__name__}:ChattySource", "topic": "chatty"})
        assert worker.connectors["chatty"].started.wait(30)
        [config] = worker.connector_task_configs("chatty")
        task = worker.start_task(TaskId("chatty", 0), config)
        assert task is not None
        assert POLLED.wait(30), f"the task did not poll: {task!r}"
        assert task.state is State.RUNNING
        logging.getLogger("chatty.test").info("from the test's thread")
    finally:
        worker.stop()

    assert contexts(captured, "connector starting") == ["[chatty|worker] "]
    assert contexts(captured, "connector making task configs") == ["[chatty|worker] "]
    assert contexts(captured, "connector stopping") == ["[chatty|worker] "]
    for message in ("task starting", "task polling", "task stopping"):
        assert contexts(captured, message) == ["[chatty|task-0] "], message
    # the runtime's own line about the task, without the task's name written into it any more
    assert contexts(captured, "retriable error from poll") == ["[chatty|task-0] "]
    assert "chatty-0" not in next(r.getMessage() for r in captured.records if "retriable" in r.getMessage())
    assert set(contexts(captured, "offsets committed")) == {"[chatty|task-0|offsets] "}
    assert contexts(captured, "from a thread the task started") == [""]
    assert contexts(captured, "from the test's thread") == [""]


def test_a_stepped_task_has_its_context_only_while_it_steps(
    captured: pytest.LogCaptureFixture, simulated_worker: SimulatedWorker
) -> None:
    POLLED.clear()
    simulated_worker.add_connector("chatty", ChattySource, {"topic": "chatty"})
    simulated_worker.run_until(POLLED.is_set, what="the task's second poll")
    assert CONNECTOR_CONTEXT.get() == "", "the caller's thread keeps no context once the task's pass returns"
    assert contexts(captured, "task polling") == ["[chatty|task-0] "]
    assert contexts(captured, "connector starting") == ["[chatty|worker] "]


def test_the_worker_format_shows_the_context(captured: pytest.LogCaptureFixture) -> None:
    with for_task("chatty", 2):
        task_log.warning("in a task")
    task_log.warning("outside")
    formatter = logging.Formatter(LOG_FORMAT)
    inside, outside = (formatter.format(r) for r in captured.records[-2:])
    assert inside.endswith(" WARNING [chatty|task-2] chatty.task: in a task")
    assert outside.endswith(" WARNING chatty.task: outside")


def test_configure_logging_gives_each_handler_the_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = logging.Handler()
    monkeypatch.setattr(logging.getLogger(), "handlers", [handler])
    configure_logging("INFO")
    configure_logging("INFO")
    assert [type(f) for f in handler.filters] == [ConnectorContextFilter]
