"""Each run of a connector or task gets one more than the generation of its stored status, and every status that
run reports carries it (:class:`~headwater.runtime.herder.generations.Generations`)."""

from __future__ import annotations

import json
from collections.abc import Callable

from headwater.harness import MonitorableSourceConnector, SimulatedWorker
from headwater.runtime.herder import Generations
from headwater.runtime.storage import MemoryStatusStore

Make = Callable[..., SimulatedWorker]


def reported(store: MemoryStatusStore, key: str) -> list[tuple[str, str, int]]:
    """(state, worker, generation) of every status record written for ``key``, in order."""
    found = []
    for written, value in store.records:
        if written == key.encode() and value is not None:
            data = json.loads(value)
            found.append((data["state"], data["worker_id"], data["generation"]))
    return found


def test_a_run_gets_one_more_than_the_stored_generation_and_keeps_it() -> None:
    store = MemoryStatusStore()
    generations = Generations(store)
    store.put_task("conn", 1, "FAILED", "boom", "elsewhere:8083", 7)
    assert generations.begin("conn", 0) == 0  # nothing stored
    assert generations.begin("conn", 1) == 8
    store.put_task("conn", 1, "RUNNING", None, "here:8083", 8)
    assert (generations.of("conn", 0), generations.of("conn", 1)) == (0, 8)
    assert generations.begin("conn", 1) == 9
    assert generations.of("conn", 1) == 9
    store.put_connector("conn", "RUNNING", None, "elsewhere:8083", 3)
    assert generations.of("conn") == 4  # a status of one that never ran here begins a run
    assert repr(generations) == "Generations({conn-0: 0, conn-1: 9, conn: 4})"


def test_every_status_of_a_run_carries_its_generation_and_a_restart_starts_a_newer_one(
    make_simulated_worker: Make,
) -> None:
    worker = make_simulated_worker()
    store = worker.herder.status_store
    assert isinstance(store, MemoryStatusStore)
    here = worker.worker.worker_id
    store.put_task("src", 1, "RUNNING", None, "elsewhere:8083", 7)  # task 1 ran on another worker before
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t"}, tasks_max=2)
    worker.step()
    worker.restart_task("src", 0)
    worker.pause_connector("src")
    worker.restart_connector("src")
    worker.step()

    assert reported(store, "status-connector-src") == [
        ("RUNNING", here, 0),
        ("PAUSED", here, 0),
        ("UNASSIGNED", here, 0),
        ("RESTARTING", here, 0),
        ("PAUSED", here, 1),
    ]
    assert reported(store, "status-task-src-0") == [
        ("RUNNING", here, 0),
        ("UNASSIGNED", here, 0),
        ("RESTARTING", here, 0),
        ("RUNNING", here, 1),
        ("PAUSED", here, 1),
        ("UNASSIGNED", here, 1),
        ("RESTARTING", here, 1),
        ("PAUSED", here, 2),
    ]
    assert reported(store, "status-task-src-1") == [
        ("RUNNING", "elsewhere:8083", 7),
        ("RUNNING", here, 8),
        ("PAUSED", here, 8),
        ("UNASSIGNED", here, 8),
        ("RESTARTING", here, 8),
        ("PAUSED", here, 9),
    ]
