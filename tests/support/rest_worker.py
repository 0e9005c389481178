"""A real worker (standalone or distributed) for REST API tests: its run loop on a thread, its REST server on a
free loopback port, and an HTTP client (httpx, from the ``dev`` extra) for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.health import DEFAULT_TIMEOUT_S
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.rest.security import RestSecurity
from headwater.runtime.storage.offsets import MemoryOffsetStore, OffsetStore
from headwater.runtime.storage.status import StatusStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from support.connectors import ALLOWED_MODULES

TIMEOUT_S = 120.0
"""How long a wait on a condition may take: generous, for a loaded machine running pytest-xdist workers beside brokers
and Spark; a condition that holds ends the wait at once."""


def wait_until(condition: Callable[[], Any], what: str, timeout_s: float = TIMEOUT_S) -> Any:
    """Poll ``condition`` until it returns something truthy (returned); fail naming ``what`` after the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s} s (last: {found!r})")
        time.sleep(0.02)


class RestClient:
    """What the REST tests ask any worker serving the REST API: ``http`` talks to it at ``url``."""

    url: str
    http: httpx.Client

    def create(self, name: str, config: dict[str, Any], **body: Any) -> httpx.Response:
        response = self.http.post("/connectors", json={"name": name, "config": config, **body})
        assert response.status_code == 201, response.text
        return response

    def status(self, name: str) -> dict[str, Any]:
        response = self.http.get(f"/connectors/{name}/status")
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def states(self, name: str) -> tuple[str, list[str]]:
        """The connector's state and its tasks' states."""
        found = self.status(name)
        return found["connector"]["state"], [task["state"] for task in found["tasks"]]

    def wait_for_states(self, name: str, connector: str, tasks: list[str]) -> None:
        """Wait until the connector and its tasks are in these states (no status yet counts as not yet)."""

        last: list[Any] = ["no status yet"]

        def reached() -> bool:
            response = self.http.get(f"/connectors/{name}/status")
            if response.status_code == 404:
                return False
            last[0] = found = response.json()
            return (found["connector"]["state"], [task["state"] for task in found["tasks"]]) == (connector, tasks)

        try:
            wait_until(reached, f"{name} reaching {connector} {tasks}")
        except AssertionError as error:
            raise AssertionError(f"{error}; its last status: {last[0]}") from None

    def topics(self, name: str) -> list[str]:
        response = self.http.get(f"/connectors/{name}/topics")
        assert response.status_code == 200, response.text
        found: list[str] = response.json()[name]["topics"]
        return found

    def offsets(self, name: str) -> list[dict[str, Any]]:
        response = self.http.get(f"/connectors/{name}/offsets")
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = response.json()["offsets"]
        return found

    def wait_for_offsets(self, name: str, expected: list[dict[str, Any]]) -> None:
        wait_until(lambda: self.offsets(name) == expected, f"{name}'s offsets becoming {expected}")


class RestWorker(RestClient):
    """A :class:`StandaloneWorker` or a :class:`DistributedWorker` running on a thread; ``http`` talks to its REST
    API."""

    def __init__(self, standalone: StandaloneWorker | DistributedWorker) -> None:
        self.standalone = standalone
        self.herder = standalone.herder
        self.stop_event = threading.Event()
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, name="worker-under-test", daemon=True)
        self.thread.start()
        rest = wait_until(lambda: self.standalone.rest or self.exit_code is not None, "the REST server starting")
        assert self.exit_code is None, f"the worker exited with {self.exit_code}"
        self.url: str = rest.url
        self.http = httpx.Client(base_url=self.url, timeout=TIMEOUT_S)

    def _run(self) -> None:
        self.exit_code = self.standalone.run(self.stop_event)

    def stop(self) -> int | None:
        self.http.close()
        self.stop_event.set()
        self.thread.join(TIMEOUT_S)
        assert not self.thread.is_alive(), "the worker did not stop"
        return self.exit_code

    def __repr__(self) -> str:
        return f"RestWorker({self.url}, connectors={self.herder.connectors()})"


class MemoryRestWorker(RestClient):
    """A worker on the in-memory broker, its standalone herder and its REST API on a free loopback port: no broker.
    Its config is ``props`` (``_`` in keys for ``.``); statuses go to ``status_store`` and source offsets to
    ``offset_store`` (each in memory by default; the standalone command's offsets file with a FileOffsetStore). With
    ``ticking`` its herder ticks on a thread every 100 ms, as the standalone command's run loop does; without, a test
    that wants ticks calls ``herder.tick``."""

    def __init__(
        self,
        health_timeout_s: float = DEFAULT_TIMEOUT_S,
        ticking: bool = False,
        status_store: StatusStore | None = None,
        offset_store: OffsetStore | None = None,
        **props: Any,
    ) -> None:
        config = {
            "listeners": "http://127.0.0.1:0",
            **ALLOWED_MODULES,
            **{key.replace("_", "."): value for key, value in props.items()},
        }
        self.broker = MemoryBroker()
        self.worker = Worker(config, MemoryTransport(self.broker), offset_store or MemoryOffsetStore())
        self.herder = StandaloneHerder(self.worker, status_store)
        app = create_app(self.herder, health_timeout_s=health_timeout_s)
        self.server = RestServer(app, "127.0.0.1", 0, RestSecurity.from_config(self.worker.config))
        self.server.start()
        self.url = self.server.url
        self.http = httpx.Client(base_url=self.url, timeout=TIMEOUT_S)
        self.stop_event = threading.Event()
        self.ticker: threading.Thread | None = None
        if ticking:
            self.ticker = threading.Thread(target=self._tick, name="memory-worker-ticks", daemon=True)
            self.ticker.start()

    def _tick(self) -> None:
        while not self.stop_event.wait(0.1):
            self.herder.tick()

    def stop(self) -> None:
        self.stop_event.set()
        if self.ticker is not None:
            self.ticker.join(TIMEOUT_S)
            assert not self.ticker.is_alive(), "the herder's ticks did not stop"
        self.http.close()
        self.server.stop()
        self.herder.stop()

    def __repr__(self) -> str:
        return f"MemoryRestWorker({self.url}, {self.herder.health!r}, connectors={self.herder.connectors()})"


def source_config(topic: str, **extra: Any) -> dict[str, Any]:
    """A monitorable source writing ``max.messages`` (default 3) records to ``topic``; ``_`` in keys for ``.``."""
    return {
        "connector.class": "monitorable-source",
        "topic": topic,
        "max.messages": "3",
        **{key.replace("_", "."): str(value) for key, value in extra.items()},
    }


def sink_config(topics: str, **extra: Any) -> dict[str, Any]:
    """A monitorable sink consuming ``topics`` as bytes; ``_`` in keys for ``.``."""
    return {
        "connector.class": "monitorable-sink",
        "topics": topics,
        "key.converter": "bytes",
        "value.converter": "bytes",
        **{key.replace("_", "."): str(value) for key, value in extra.items()},
    }
