"""Headwater's pytest plugin (entry point ``pytest11``): fixtures that give a simulated worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from headwater.harness.monitorable import HANDLES, RuntimeHandles
from headwater.harness.simulated import SimulatedWorker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka: needs a real Kafka broker")


@pytest.fixture
def runtime_handles() -> Iterator[RuntimeHandles]:
    """The registry monitorable connectors report into, emptied before and after the test."""
    HANDLES.reset()
    yield HANDLES
    HANDLES.reset()


@pytest.fixture
def make_simulated_worker(runtime_handles: RuntimeHandles) -> Iterator[Callable[..., SimulatedWorker]]:
    """A factory: ``make_simulated_worker(config, tick_ms=..., partitions=...)``; every worker is closed after."""
    made: list[SimulatedWorker] = []

    def make(config: dict[str, Any] | None = None, **options: Any) -> SimulatedWorker:
        worker = SimulatedWorker(config, **options)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.close()


@pytest.fixture
def simulated_worker(make_simulated_worker: Callable[..., SimulatedWorker]) -> SimulatedWorker:
    """A simulated worker with the default config (schemaless JSON, Kafka Connect's intervals)."""
    return make_simulated_worker()
