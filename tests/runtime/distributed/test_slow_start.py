"""A connector whose ``start`` does not return holds up nothing on a distributed worker against the real broker
(issue 21): the worker's loop goes on, so its REST API answers, other connectors and tasks start, it stays in its
group, and the connector's status says where it waits."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support import slow_start
from support.rest_worker import RestWorker, wait_until

from .conftest import MakeWorker

SLOW = {"connector.class": "support.slow_start:SlowStartSource", "tasks.max": "1"}


@pytest.fixture
def worker(make_worker: MakeWorker) -> Iterator[RestWorker]:
    yield make_worker(task_shutdown_graceful_timeout_ms=1000)
    for event in slow_start.GATES.values():
        event.set()


@pytest.mark.kafka
def test_a_start_that_blocks_holds_up_neither_the_loop_nor_other_connectors(
    worker: RestWorker, unique_name: str
) -> None:
    slow, other = f"{unique_name}-slow", f"{unique_name}-other"
    worker.create(slow, SLOW)

    def starting() -> dict[str, Any] | None:
        response = worker.http.get(f"/connectors/{slow}/status")
        found: dict[str, Any] | None = response.json()["connector"] if response.status_code == 200 else None
        return found if found and "wait_for_the_source_cluster" in found.get("trace", "") else None

    status = wait_until(starting, "the status of a connector still starting")
    assert status["state"] == "UNASSIGNED" and "start() has not returned" in status["trace"]

    worker.create(other, {**SLOW, "block.ms": "0"})
    worker.wait_for_states(other, "RUNNING", ["RUNNING"])
    assert sorted(worker.http.get("/connectors").json()) == sorted([slow, other])
    assert not slow_start.returned(slow).is_set(), "all of it answered while start() was still blocked"

    slow_start.gate(slow).set()
    worker.wait_for_states(slow, "RUNNING", ["RUNNING"])
