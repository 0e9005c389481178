"""A connector whose ``start`` does not return (issue 21) holds up nobody, on a real standalone worker against the
real broker: the REST API keeps answering, other connectors start, its status says where it waits, and a delete
goes through, delivered to it once its ``start`` returns."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from support import slow_start
from support.rest_worker import RestWorker, wait_until

from .conftest import MakeWorker

SLOW = {"connector.class": "support.slow_start:SlowStartSource", "tasks.max": "1"}


@pytest.fixture
def worker(make_rest_worker: MakeWorker) -> Iterator[RestWorker]:
    worker = make_rest_worker(connector_start_wait_ms=200, task_shutdown_graceful_timeout_ms=1000)
    yield worker
    for event in slow_start.GATES.values():
        event.set()  # no start() left waiting after the test


@pytest.mark.kafka
def test_a_start_that_blocks_holds_up_no_request_and_says_where_it_waits(worker: RestWorker, unique_name: str) -> None:
    slow, other = f"{unique_name}-slow", f"{unique_name}-other"
    worker.create(slow, SLOW)  # answers once connector.start.wait.ms has passed, start() still running

    began = time.monotonic()
    listed = worker.http.get("/connectors")
    took_s = time.monotonic() - began
    assert listed.status_code == 200 and listed.json() == [slow]
    assert not slow_start.returned(slow).is_set(), "GET /connectors answered while start() was still blocked"
    print(f"GET /connectors answered in {took_s * 1000:.0f} ms while a connector's start() blocked")

    status = wait_until(lambda: starting_status(worker, slow), "the status of a connector still starting")
    assert status["state"] == "UNASSIGNED"
    assert "start() has not returned" in status["trace"]
    assert "wait_for_the_source_cluster" in status["trace"], status["trace"]
    assert worker.status(slow)["tasks"] == []

    worker.create(other, {**SLOW, "block.ms": "0"})
    worker.wait_for_states(other, "RUNNING", ["RUNNING"])
    assert not slow_start.returned(slow).is_set()

    slow_start.gate(slow).set()
    worker.wait_for_states(slow, "RUNNING", ["RUNNING"])
    assert "trace" not in worker.status(slow)["connector"]


def starting_status(worker: RestWorker, name: str) -> dict[str, Any] | None:
    """The connector's status once it has a trace (none is written until its start() has run for a second)."""
    response = worker.http.get(f"/connectors/{name}/status")
    found: dict[str, Any] | None = response.json()["connector"] if response.status_code == 200 else None
    return found if found and "trace" in found else None


@pytest.mark.kafka
def test_a_connector_deleted_while_its_start_blocks_is_told_once_start_returns(
    worker: RestWorker, unique_name: str
) -> None:
    worker.create(unique_name, SLOW)
    response = worker.http.delete(f"/connectors/{unique_name}")
    assert response.status_code == 204, response.text
    assert worker.http.get("/connectors").json() == []
    assert worker.http.get(f"/connectors/{unique_name}/status").status_code == 404
    assert (unique_name, True) not in slow_start.STOPS, "start() has not returned: stop must wait for it"

    slow_start.gate(unique_name).set()
    wait_until(lambda: (unique_name, True) in slow_start.STOPS, "stop(connector_deleted=True) after start()")
    assert [stop for stop in slow_start.STOPS if stop[0] == unique_name] == [(unique_name, True)]
    assert worker.http.get(f"/connectors/{unique_name}/status").status_code == 404, "no late status"
