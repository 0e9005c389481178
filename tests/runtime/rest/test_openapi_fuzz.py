"""Property-based fuzzing of the served OpenAPI spec (schemathesis): for every operation, requests generated from
the spec (and deliberately invalid ones) never get a 5xx from a real server on a free loopback port.

The worker runs over the in-memory transport, so the fuzzing needs no broker; one source and one sink connector
exist, and generated connector names are mixed with theirs so requests reach real connectors too."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker

CONNECTORS = {
    "fuzz-source": {"connector.class": "monitorable-source", "topic": "fuzzed", "max.messages": "5"},
    "fuzz-sink": {"connector.class": "monitorable-sink", "topics": "fuzzed", "value.converter": "bytes"},
}


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[RestServer]:
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    herder = StandaloneHerder(worker)
    herder.health.ready()  # no run loop: healthy while its herder can be taken
    for name, config in CONNECTORS.items():
        herder.put_connector_config(name, config)
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    levels = {logger: logger.level for logger in loggers if isinstance(logger, logging.Logger)}
    yield server
    server.stop()
    herder.stop()
    for logger, level in levels.items():  # a generated PUT /admin/loggers may have set one
        logger.setLevel(level)


def operation_labels() -> list[str]:
    """``METHOD /path`` of every operation the app serves, read from the app's own spec (no server needed)."""
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    paths = create_app(StandaloneHerder(worker)).openapi()["paths"]
    return [f"{method.upper()} {path}" for path, methods in paths.items() for method in methods]


@pytest.fixture(scope="module")
def api_schema(fuzz_server: RestServer) -> Any:
    return schemathesis.openapi.from_url(f"{fuzz_server.url}/openapi.json")


@pytest.mark.parametrize("label", operation_labels())
def test_no_server_errors(label: str, api_schema: Any, fuzz_server: RestServer, runtime_handles: Any) -> None:
    operation = api_schema.find_operation_by_label(label)
    assert operation is not None, label

    @given(case=operation.as_strategy())
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def requests_never_fail_the_server(case: Any) -> None:
        connector = (case.path_parameters or {}).get("connector")
        if connector is not None and len(connector) % 3:  # two in three reach a real connector
            case.path_parameters["connector"] = sorted(CONNECTORS)[len(connector) % 3 - 1]
        case.call_and_validate(base_url=fuzz_server.url, checks=[not_a_server_error])

    requests_never_fail_the_server()
