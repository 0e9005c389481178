"""Where metrics are served: ``GET /metrics`` on the REST listener, and the ``metrics.port`` listener of its own (a
bad port is refused when the worker file is read; a busy one fails the start naming the key). Over an in-memory
worker: no broker."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.metrics import MetricsServer, worker_registry
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    herder = StandaloneHerder(worker)
    herder.put_connector_config("src", {"connector.class": "monitorable-source", "topic": "t", "max.messages": "3"})
    yield herder
    herder.stop()


def test_the_rest_listener_serves_metrics(herder: StandaloneHerder) -> None:
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    try:
        response = httpx.get(f"{server.url}/metrics", timeout=10)
        openmetrics = httpx.get(f"{server.url}/metrics", headers={"Accept": "application/openmetrics-text"}, timeout=10)
    finally:
        server.stop()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert 'headwater_connect_worker_connector_count{state="running"} 1.0' in response.text
    assert "python_info" in response.text, "the process's own metrics too"
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.endswith("# EOF\n")


def test_metrics_port_serves_the_same_metrics_and_stops(herder: StandaloneHerder) -> None:
    server = MetricsServer.from_config(herder.worker, {"metrics.port": 0, "metrics.host": "127.0.0.1"})
    assert server is not None
    server.start()
    try:
        assert server.port != 0
        response = httpx.get(server.url, timeout=10)
        assert response.status_code == 200
        assert 'headwater_connect_task_status{connector="src",state="running",task="0"} 1.0' in response.text
    finally:
        server.stop()
    server.stop()  # idempotent
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_no_metrics_port_no_listener(herder: StandaloneHerder) -> None:
    assert MetricsServer.from_config(herder.worker, herder.worker.config) is None


def test_a_busy_metrics_port_fails_the_start_naming_the_key(herder: StandaloneHerder) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = MetricsServer(worker_registry(herder.worker), "127.0.0.1", taken.getsockname()[1])
        with pytest.raises(
            ConnectError, match=r"cannot serve metrics at http://127\.0\.0\.1:\d+/metrics \(metrics\.port"
        ):
            server.start()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("metrics.port=70000", "invalid value '70000': Expected a port number between 0 (any free port) and 65535"),
        ("metrics.port=-1", "invalid value '-1': Expected a port number between 0 (any free port) and 65535"),
        ("metrics.port=http", "invalid value 'http': Expected value to be an integer"),
        ("metrics.host=", "invalid value '': "),
    ],
)
def test_a_bad_metrics_key_is_refused_naming_it(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(f"bootstrap.servers=localhost:9092\n{line}\n", encoding="utf-8")
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(path, [])
    key = line.split("=")[0]
    assert str(raised.value).startswith(f"{path}:2: {key}: {message}")
