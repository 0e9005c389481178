"""The REST server itself: the ``listeners`` setting, binding, and the standalone command serving the API."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from headwater.runtime.config.listeners import parse_listener
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConfigError, ConnectError
from support.process import WorkerProcess
from support.rest_worker import source_config

LISTENING = re.compile(r"REST API listening on (http://127\.0\.0\.1:\d+)")


def memory_server(port: int = 0) -> RestServer:
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    return RestServer(create_app(StandaloneHerder(worker)), "127.0.0.1", port)


def test_the_default_listener_is_the_loopback_interface_on_8083() -> None:
    assert WORKER_CONFIG.parse({})["listeners"] == ["http://127.0.0.1:8083"]
    assert parse_listener("listeners", "http://127.0.0.1:8083") == ("127.0.0.1", 8083)
    assert parse_listener("listeners", "http://[::1]:0/") == ("::1", 0)
    assert parse_listener("listeners", "http://:8083") == ("0.0.0.0", 8083)
    assert parse_listener("listeners", "https://localhost:8443") == ("localhost", 8443)


@pytest.mark.parametrize(
    "listeners",
    ["ftp://127.0.0.1:8443", "127.0.0.1:8083", "http://h:port", "http://h:70000", "http://a:1,http://b:2"],
)
def test_bad_listeners_are_config_errors(listeners: str) -> None:
    with pytest.raises(ConfigError) as error:
        WORKER_CONFIG.parse({"listeners": listeners})
    assert error.value.key == "listeners"


def test_port_zero_takes_a_free_port_and_stop_closes_it() -> None:
    server = memory_server()
    server.start()
    try:
        assert server.port != 0
        assert httpx.get(f"{server.url}/connectors").json() == []
    finally:
        server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/connectors")


def test_a_busy_port_fails_start_naming_the_address() -> None:
    first = memory_server()
    first.start()
    try:
        second = memory_server(first.port)
        with pytest.raises(ConnectError, match=f"cannot listen for REST requests on {first.url}"):
            second.start()
    finally:
        first.stop()


@pytest.mark.kafka
def test_standalone_command_serves_the_api_and_logs_its_url(
    kafka_bootstrap: str, tmp_path: Path, unique_name: str
) -> None:
    connectors = {unique_name: source_config(f"{unique_name}-t")}
    with WorkerProcess(tmp_path, {"bootstrap.servers": kafka_bootstrap}, connectors) as worker:
        worker.start()
        line = worker.wait_for_log("REST API listening on")
        found = LISTENING.search(line)
        assert found, line
        url = found.group(1)
        assert httpx.get(f"{url}/connectors", timeout=10).json() == [unique_name]
        assert worker.terminate() == 0


@pytest.mark.kafka
def test_standalone_command_exits_1_when_its_listener_is_busy(kafka_bootstrap: str, tmp_path: Path) -> None:
    busy = memory_server()
    busy.start()
    try:
        props = {"bootstrap.servers": kafka_bootstrap, "listeners": busy.url}
        with WorkerProcess(tmp_path, props, {}) as worker:
            worker.start()
            assert worker.wait() == 1
            worker.assert_log_contains(f"cannot listen for REST requests on {busy.url}")
    finally:
        busy.stop()
