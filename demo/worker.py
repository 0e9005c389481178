"""The demo's worker: the runtime's own worker and standalone herder on a transport, source offsets in a file, the
herder's run loop on a thread, and Kafka Connect's REST API on a free loopback port, with a small client for it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from headwater.demo.backend import Backend
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import FileOffsetStore
from headwater.runtime.transport.kafka import kafka_cluster_id
from headwater.runtime.worker import Worker

WORKER_CONFIG = {
    "offset.flush.interval.ms": 1000,
    "heartbeat.interval.ms": 500,
    "key.converter": "json",
    "value.converter": "json",
    "key.converter.schemas.enable": "false",
    "value.converter.schemas.enable": "false",
    "connector.class.allowed.modules": "headwater.demo",  # the pyarrow sink used without Spark
}
"""Schemaless JSON (the CDC connector's events), commits every second and heartbeats every half second, so the
demo shows them within its minute."""


class RestError(RuntimeError):
    """A REST request answered with an error status."""


class RestClient:
    """JSON over HTTP to the worker's REST API (the standard library's client: the demo needs no extra)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded JSON answer (``None`` for an empty one); raises :class:`RestError` for a 4xx or 5xx."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            raise RestError(f"{method} {path}: {error.code} {detail}") from None
        return json.loads(text) if text.strip() else None


class DemoWorker:
    """Between ``start`` and ``stop``: a worker on ``backend``'s transport serving REST at ``rest.url``."""

    def __init__(self, backend: Backend, directory: Path, config: dict[str, Any] | None = None) -> None:
        self.backend = backend
        self.offset_store = FileOffsetStore(directory / "connect.offsets")
        self.worker = Worker({**WORKER_CONFIG, **(config or {})}, backend.transport, self.offset_store)
        self.herder = StandaloneHerder(self.worker)
        cluster = None
        if backend.bootstrap_servers is not None:
            cluster = kafka_cluster_id({"bootstrap.servers": backend.bootstrap_servers})
        self.rest = RestServer(create_app(self.herder, cluster), "127.0.0.1", 0)
        self.client = RestClient(self.rest.url)
        self._stop = threading.Event()
        self._loop = threading.Thread(target=self._run, name="demo-herder", daemon=True)

    def start(self) -> DemoWorker:
        self.offset_store.start()
        self.herder.status_store.start()
        self.rest.start()
        self.client = RestClient(self.rest.url)
        self.worker.worker_id = f"127.0.0.1:{self.rest.port}"
        self._loop.start()
        self.herder.health.ready()
        return self

    def _run(self) -> None:
        """The herder's run loop, as ``headwater standalone`` runs it: reconfigurations and active topics."""
        while not self._stop.wait(0.1):
            self.herder.tick()

    def stop(self) -> None:
        """Stop serving REST, stop the tasks and connectors (each commits first), then the stores."""
        self._stop.set()
        if self._loop.is_alive():
            self._loop.join()
        self.rest.stop()
        self.herder.stop()
        self.herder.status_store.stop()
        self.offset_store.stop()

    def __enter__(self) -> DemoWorker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DemoWorker({self.backend.description}, {self.rest!r}, connectors={self.herder.connectors()})"
