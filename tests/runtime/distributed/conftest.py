"""Fixtures for distributed-mode tests: workers of one cluster against the real broker, on threads of the test
process (so monitorable connectors report into its registry) or as subprocesses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.harness.monitorable import RuntimeHandles
from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.config.properties import format_properties, read_properties
from support.distributed_process import DistributedCluster, cluster_props
from support.rest_worker import RestWorker

MakeWorker = Callable[..., RestWorker]


@pytest.fixture
def make_worker(
    kafka_bootstrap: str, tmp_path: Path, unique_name: str, runtime_handles: RuntimeHandles
) -> Iterator[MakeWorker]:
    """``make_worker(**worker_props)``: one more worker of the test's cluster on a thread (``_`` in keys for
    ``.``); all are stopped after the test."""
    made: list[RestWorker] = []

    def make(**props: Any) -> RestWorker:
        worker_props = {
            **cluster_props(kafka_bootstrap, unique_name),
            **{key.replace("_", "."): value for key, value in props.items()},
        }
        path = tmp_path / f"worker-{len(made)}.properties"
        path.write_text(format_properties(worker_props), encoding="utf-8")
        worker = RestWorker(DistributedWorker(read_properties(path)))
        made.append(worker)
        return worker

    yield make
    for worker in made:  # all at once: each hands its tasks to the others while they stop too
        worker.http.close()
        worker.stop_event.set()
    for worker in made:
        if worker.thread.is_alive():
            worker.stop()


@pytest.fixture
def cluster(kafka_bootstrap: str, tmp_path: Path, unique_name: str) -> Iterator[DistributedCluster]:
    """A cluster of worker subprocesses (none started yet: ``cluster.add_worker()``), stopped after the test."""
    with DistributedCluster(tmp_path, kafka_bootstrap, unique_name) as made:
        yield made
