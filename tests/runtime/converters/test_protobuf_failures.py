"""The Protobuf converter's failures in a running task: a registry that does not answer is retried under the task's
``errors.retry.timeout`` and then fails the task naming the registry."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.tasks.base import State
from support.databases import free_port
from support.schema_source import SchemaSource

Make = Callable[..., SimulatedWorker]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_an_unreachable_registry_is_retried_then_fails_the_task_naming_it(
    make_simulated_worker: Make, unique_name: str
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    worker = make_simulated_worker()
    topic = f"{unique_name}-orders"
    worker.create_topic(topic, 1)
    worker.add_connector(
        unique_name,
        SchemaSource,
        {
            "topic": topic,
            "value.converter": "protobuf",
            "value.converter.schema.registry.url": url,
            "errors.retry.timeout": "5000",
            "errors.retry.delay.max.ms": "1000",
        },
    )
    worker.run_until(lambda: worker.task_state(unique_name) is not None, what="the task starting")
    started = worker.clock.now_ms()
    worker.run_until(lambda: worker.task_state(unique_name) is State.FAILED, what="the task failing")
    assert worker.clock.now_ms() - started >= 5000, "failed before errors.retry.timeout had passed"
    trace = str(worker.task(unique_name).failure)
    assert f"cannot reach the Schema Registry at {url}" in trace
    assert worker.messages(topic) == []
