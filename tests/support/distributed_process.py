"""Distributed workers in subprocesses, for tests of what only real processes show: several workers sharing one
cluster, SIGKILL of one of them, a worker joining or leaving.

:class:`DistributedCluster` starts :class:`DistributedWorkerProcess` workers with one ``group.id`` and one set of
internal topics, talks to any of them over REST, and reads what each worker's monitorable connectors did from the
events file of its directory (see :data:`~headwater.harness.monitorable.EVENTS_FILE_ENV`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from headwater.harness.monitorable import EVENTS_FILE_ENV, read_events
from support.connectors import ALLOWED_MODULES
from support.process import DEFAULT_TIMEOUT_S, WorkerProcess
from support.rest_worker import wait_until

_LISTENING = re.compile(r"REST API listening on (http://\S+)")


def cluster_props(bootstrap_servers: str, name: str) -> dict[str, Any]:
    """Worker settings of a test cluster named ``name`` (its ``group.id`` and its internal topics' prefix): one
    replica, a 6 s session timeout (the broker's least), 500 ms heartbeats and offset flushes."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": name,
        "config.storage.topic": f"{name}-configs",
        "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status",
        "config.storage.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "offset.storage.partitions": 5,
        "session.timeout.ms": 6_000,
        "group.heartbeat.interval.ms": 500,
        "offset.flush.interval.ms": 500,
        "listeners": "http://127.0.0.1:0",
        **ALLOWED_MODULES,
    }


class DistributedWorkerProcess(WorkerProcess):
    """``headwater distributed worker.properties`` in a subprocess, files, log and events file under ``directory``."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        worker_props: Mapping[str, Any],
        log_level: str = "INFO",
        env: Mapping[str, str] | None = None,
    ) -> None:
        events = str(Path(directory) / "events.jsonl")
        super().__init__(directory, worker_props, {}, log_level=log_level, env={EVENTS_FILE_ENV: events, **(env or {})})

    def command(self) -> list[str]:
        level = ["--log-level", self.log_level]
        return [sys.executable, "-m", "headwater.runtime.commands.cli", *level, "distributed", str(self.worker_path)]

    def ask_to_stop(self) -> None:
        """SIGTERM without waiting (:meth:`terminate` waits), so several workers can stop at once."""
        if self.running:
            self._send(signal.SIGTERM)

    @property
    def events_path(self) -> Path:
        return self.directory / "events.jsonl"

    def events(self, connector: str | None = None) -> list[dict[str, Any]]:
        """What the monitorable connectors of this worker did, in every run, oldest first."""
        found = read_events(self.events_path)
        return [event for event in found if connector is None or event["connector"] == connector]

    def url(self, timeout: float = DEFAULT_TIMEOUT_S) -> str:
        """The REST API's address in this run, once the worker listens."""
        log = self.wait_for_log("REST API listening on", timeout)
        found = _LISTENING.search(log)
        assert found is not None, log
        return found.group(1)

    @property
    def worker_id(self) -> str:
        """The worker's id in statuses: its REST address without the scheme."""
        return self.url().removeprefix("http://")


class DistributedCluster:
    """Workers of one cluster named ``name`` (its ``group.id``, and the prefix of its internal topics) on the
    Kafka cluster at ``bootstrap_servers``, each in a directory under ``directory``. ``worker_props`` add to (or
    override) :func:`cluster_props`; ``env`` adds to every worker's environment."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        bootstrap_servers: str,
        name: str,
        worker_props: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.name = name
        self.worker_props = {**cluster_props(bootstrap_servers, name), **(worker_props or {})}
        self.env = dict(env or {})
        """Environment variables added to every worker's."""
        self.workers: list[DistributedWorkerProcess] = []
        self._clients: dict[str, httpx.Client] = {}

    def add_worker(self, **props: Any) -> DistributedWorkerProcess:
        """Start one more worker (``_`` in keys for ``.``) and return once its REST API answers."""
        extra = {key.replace("_", "."): value for key, value in props.items()}
        worker = DistributedWorkerProcess(
            self.directory / f"worker-{len(self.workers)}", {**self.worker_props, **extra}, env=self.env
        )
        self.workers.append(worker)
        worker.start()
        worker.url()
        return worker

    @property
    def running(self) -> list[DistributedWorkerProcess]:
        return [worker for worker in self.workers if worker.running]

    def http(self, worker: DistributedWorkerProcess | None = None) -> httpx.Client:
        """A client of ``worker``'s REST API (the first running worker's by default)."""
        chosen = worker or self.running[0]
        url = chosen.url()
        if url not in self._clients:
            self._clients[url] = httpx.Client(base_url=url, timeout=DEFAULT_TIMEOUT_S)
        return self._clients[url]

    def status(self, name: str, via: DistributedWorkerProcess | None = None) -> dict[str, Any] | None:
        """The connector's status as ``via`` answers it, ``None`` on 404."""
        response = self.http(via).get(f"/connectors/{name}/status")
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def running_tasks(self, name: str, via: DistributedWorkerProcess | None = None) -> dict[int, str]:
        """Task number -> worker id of each RUNNING task of the connector."""
        status = self.status(name, via) or {"tasks": []}
        return {task["id"]: task["worker_id"] for task in status["tasks"] if task["state"] == "RUNNING"}

    def wait_for_running(self, name: str, tasks: int, timeout: float = DEFAULT_TIMEOUT_S) -> dict[int, str]:
        """Wait until the connector and ``tasks`` tasks run on live workers; return task -> worker id."""
        live = {worker.worker_id for worker in self.running}

        def running() -> dict[int, str] | None:
            status = self.status(name)
            found = self.running_tasks(name)
            ok = status and status["connector"]["state"] == "RUNNING" and status["connector"]["worker_id"] in live
            return found if ok and len(found) == tasks and set(found.values()) <= live else None

        return dict(wait_until(running, f"{name} running {tasks} tasks on {sorted(live)}", timeout))

    def worker(self, worker_id: str) -> DistributedWorkerProcess:
        return next(worker for worker in self.workers if worker.running and worker.worker_id == worker_id)

    def close(self) -> None:
        """Stop every worker still running, gracefully (killed when that takes too long)."""
        for client in self._clients.values():
            client.close()
        stopping = self.running
        for worker in stopping:
            worker.ask_to_stop()
        for worker in stopping:
            with contextlib.suppress(AssertionError):  # killed after the timeout
                worker.terminate()

    def __enter__(self) -> DistributedCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DistributedCluster({self.name!r}, workers={self.workers!r})"
