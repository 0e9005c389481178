"""Fixtures for the REST API tests: workers on the in-memory broker, which serve the REST API as a standalone worker
does, for what the API does; real standalone workers against the real broker where the wire or the broker matters
(the cluster id, topics and offsets on the real log, the status topic)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.harness.monitorable import RuntimeHandles
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from headwater.runtime.storage.status import StatusStore
from support.connectors import ALLOWED_MODULES
from support.rest_worker import MemoryRestWorker, RestWorker

MakeWorker = Callable[..., RestWorker]


@pytest.fixture
def make_rest_worker(kafka_bootstrap: str, tmp_path: Path, runtime_handles: RuntimeHandles) -> Iterator[MakeWorker]:
    """``make_rest_worker(status_store=None, **worker_props)``: a running worker (``_`` in keys for ``.``);
    every worker is stopped after the test."""
    made: list[RestWorker] = []

    def make(status_store: StatusStore | None = None, **props: Any) -> RestWorker:
        worker_props = {
            "bootstrap.servers": kafka_bootstrap,
            "listeners": "http://127.0.0.1:0",
            "offset.storage.file.filename": str(tmp_path / f"offsets-{len(made)}"),
            "offset.flush.interval.ms": 200,
            "consumer.max.poll.records": 100,
            **ALLOWED_MODULES,
            **{key.replace("_", "."): value for key, value in props.items()},
        }
        path = tmp_path / f"worker-{len(made)}.properties"
        path.write_text(format_properties(worker_props), encoding="utf-8")
        worker = RestWorker(StandaloneWorker(read_properties(path), [], status_store=status_store))
        made.append(worker)
        return worker

    yield make
    for worker in made:
        if worker.thread.is_alive():
            worker.stop()


@pytest.fixture
def rest_worker(make_rest_worker: MakeWorker) -> RestWorker:
    """A running worker with the default worker config."""
    return make_rest_worker()


@pytest.fixture
def make_memory_rest(runtime_handles: RuntimeHandles) -> Iterator[Callable[..., MemoryRestWorker]]:
    """``make_memory_rest(health_timeout_s=10.0, ticking=False, status_store=None, **worker_props)``: an in-memory
    worker serving REST, no broker (its herder ticking on a thread with ``ticking``); stopped after the test."""
    made: list[MemoryRestWorker] = []

    def make(**props: Any) -> MemoryRestWorker:
        made.append(MemoryRestWorker(**props))
        return made[-1]

    yield make
    for worker in made:
        worker.stop()


@pytest.fixture
def memory_rest(make_memory_rest: Callable[..., MemoryRestWorker]) -> MemoryRestWorker:
    """An in-memory worker serving REST whose herder is ready (as its command marks it once started)."""
    worker = make_memory_rest()
    worker.herder.health.ready()
    return worker


@pytest.fixture
def make_live_rest(make_memory_rest: Callable[..., MemoryRestWorker]) -> Callable[..., MemoryRestWorker]:
    """``make_live_rest(status_store=None, **worker_props)``: an in-memory worker serving REST as the standalone
    command runs one, ready, its herder ticking on a thread, with :func:`make_rest_worker`'s settings."""

    def make(**props: Any) -> MemoryRestWorker:
        worker = make_memory_rest(
            ticking=True, **{"offset_flush_interval_ms": 200, "consumer_max_poll_records": 100, **props}
        )
        worker.herder.health.ready()
        return worker

    return make


@pytest.fixture
def live_rest(make_live_rest: Callable[..., MemoryRestWorker]) -> MemoryRestWorker:
    """:func:`make_live_rest` with the default worker config."""
    return make_live_rest()
