"""``${provider:path:key}`` references in connector configs (KIP-297): stored and served as written, resolved when
the connector or task starts, a failure to resolve fails it naming the key and reference, validate and create take
a reference in a typed key, and a provided secret is in no REST response (in-memory transport)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.runtime import State, TaskId
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.validation import validate_connector_config
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from support.connectors import ALLOWED_MODULES
from support.rest_worker import wait_until
from support.secret_source import STARTED

SECRET = "s3cret-VALUE-9f2"
CLASS = "support.secret_source:SecretSourceConnector"
PROVIDERS = {
    "config.providers": "file,env",
    "config.providers.file.class": "file",
    "config.providers.env.class": "env",
    **ALLOWED_MODULES,
}


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "db.properties"
    path.write_text(f"password={SECRET}\nport=5432\n", encoding="utf-8")
    monkeypatch.setenv("HW_TEST_TOPIC", "orders")
    monkeypatch.setenv("HW_TEST_NOT_A_PORT", f"{SECRET} is no port")
    return path


def config(secrets: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": CLASS,
        "topic": "${env:HW_TEST_TOPIC}",
        "password": f"${{file:{secrets}:password}}",
        "port": f"${{file:{secrets}:port}}",
        **extra,
    }


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    herder = StandaloneHerder(Worker(PROVIDERS, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    yield herder
    herder.stop()


@pytest.fixture
def rest(herder: StandaloneHerder) -> Iterator[httpx.Client]:
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()


def state(rest: httpx.Client, name: str) -> dict[str, Any]:
    status: dict[str, Any] = rest.get(f"/connectors/{name}/status").json()
    return status


def test_connector_and_task_start_with_resolved_values(herder: StandaloneHerder, secrets: Path) -> None:
    herder.put_connector_config("c", config(secrets))
    resolved = {"topic": "orders", "password": SECRET, "port": "5432"}
    assert wait_until(lambda: ("c", 0) in STARTED, "the task starting")
    assert {k: STARTED["c", None][k] for k in resolved} == resolved
    assert {k: STARTED["c", 0][k] for k in resolved} == resolved
    assert herder.worker.connectors["c"].config["port"] == 5432  # parsed once resolved


def test_configs_are_stored_and_served_unresolved(herder: StandaloneHerder, rest: httpx.Client, secrets: Path) -> None:
    assert rest.post("/connectors", json={"name": "c", "config": config(secrets)}).status_code == 201
    wait_until(lambda: state(rest, "c").get("tasks"), "the task starting")
    assert rest.get("/connectors/c/config").json() == {**config(secrets), "name": "c"}
    assert herder.configs["c"] == {**config(secrets), "name": "c"}
    # the connector passed its resolved config on: the stored task config holds the references again
    stored = herder.task_configs["c"][0]
    assert stored["password"] == config(secrets)["password"] and stored["topic"] == "${env:HW_TEST_TOPIC}"


def test_no_rest_response_holds_a_provided_secret(herder: StandaloneHerder, rest: httpx.Client, secrets: Path) -> None:
    bodies = [rest.post("/connectors", json={"name": "c", "config": config(secrets)}).text]
    wait_until(lambda: state(rest, "c")["connector"]["state"] == "RUNNING" and state(rest, "c")["tasks"], "running")
    bodies.append(rest.put("/connectors/d/config", json=config(secrets, port="${file:/missing:port}")).text)
    wait_until(lambda: state(rest, "d")["connector"]["state"] == "FAILED", "d failing")
    bodies.append(rest.put("/connectors/e/config", json=config(secrets, port="${env:HW_TEST_NOT_A_PORT}")).text)
    wait_until(lambda: state(rest, "e")["connector"]["state"] == "FAILED", "e failing")
    for path in [
        "/connectors",
        "/connectors?expand=status&expand=info",
        "/connectors/c",
        "/connectors/c/config",
        "/connectors/c/status",
        "/connectors/c/tasks",
        "/connectors/c/tasks/0/status",
        "/connectors/d/status",
        "/connectors/e/status",
    ]:
        bodies.append(rest.get(path).text)
    bodies.append(rest.put(f"/connector-plugins/{CLASS}/config/validate", json={**config(secrets), "name": "c"}).text)
    assert all(SECRET not in body for body in bodies)
    assert STARTED["c", 0]["password"] == SECRET  # the secret did reach the task


def test_an_unresolvable_reference_fails_the_connector_naming_key_and_reference(
    rest: httpx.Client, secrets: Path
) -> None:
    missing = f"${{file:{secrets}:user}}"
    rest.post("/connectors", json={"name": "c", "config": config(secrets, password=missing)})
    trace = wait_until(lambda: state(rest, "c")["connector"].get("trace"), "the connector failing")
    assert state(rest, "c")["connector"]["state"] == "FAILED" and state(rest, "c")["tasks"] == []
    assert f"for configuration password: cannot resolve {missing}: no key 'user'" in trace
    assert SECRET not in trace


def test_an_invalid_resolved_value_fails_the_connector_naming_key_and_reference(
    rest: httpx.Client, secrets: Path
) -> None:
    rest.post("/connectors", json={"name": "c", "config": config(secrets, port="${env:HW_TEST_NOT_A_PORT}")})
    trace = wait_until(lambda: state(rest, "c")["connector"].get("trace"), "the connector failing")
    assert "Invalid value '${env:HW_TEST_NOT_A_PORT}' for configuration port: Expected value to be an integer" in trace
    assert SECRET not in trace


def test_an_unresolvable_reference_fails_the_task_naming_key_and_reference(secrets: Path) -> None:
    seen: list[tuple[str, int | None, State, str | None]] = []
    worker = Worker(PROVIDERS, MemoryTransport(MemoryBroker()), MemoryOffsetStore(), threaded=False)
    worker.listener = lambda *change: seen.append(change)
    worker.start_connector("c", config(secrets))
    task_config = {**config(secrets), "name": "c", "task.number": "0", "topic": "${env:HW_TEST_MISSING}"}
    assert worker.start_task(TaskId("c", 0), task_config) is None
    (_, task, failed, trace) = seen[-1]
    assert (task, failed) == (0, State.FAILED)
    assert trace is not None and "configuration topic: cannot resolve ${env:HW_TEST_MISSING}" in trace
    worker.stop()


def test_validate_and_create_take_a_reference_in_a_typed_key(herder: StandaloneHerder, secrets: Path) -> None:
    props = {**config(secrets), "name": "c"}
    infos = validate_connector_config(props, herder.worker.config)
    assert infos["error_count"] == 0
    values = {info["value"]["name"]: info["value"]["value"] for info in infos["configs"]}
    assert values["port"] == props["port"]
    assert herder.put_connector_config("c", props)
    assert validate_connector_config({**props, "port": "x"}, herder.worker.config)["error_count"] == 1


def test_a_task_of_a_connector_running_elsewhere_resolves_both_configs(secrets: Path) -> None:
    """A distributed worker starts tasks of connectors other workers run, from the stored (unresolved) configs."""
    seen: list[tuple[str, int | None, State, str | None]] = []
    worker = Worker(PROVIDERS, MemoryTransport(MemoryBroker()), MemoryOffsetStore(), threaded=False)
    worker.listener = lambda *change: seen.append(change)
    task_config = {**config(secrets), "name": "r", "task.number": "0"}
    assert worker.start_task(TaskId("r", 0), task_config, connector_config=config(secrets)) is not None
    assert STARTED["r", 0]["password"] == SECRET
    broken = config(secrets, **{"heartbeat.interval.ms": "${env:HW_TEST_MISSING}"})
    assert worker.start_task(TaskId("r", 1), {**task_config, "task.number": "1"}, connector_config=broken) is None
    (_, task, failed, trace) = seen[-1]
    assert (task, failed) == (1, State.FAILED)
    assert trace is not None and "configuration heartbeat.interval.ms: cannot resolve ${env:HW_TEST_MISSING}" in trace
    invalid = config(secrets, port="${env:HW_TEST_NOT_A_PORT}")
    assert worker.start_task(TaskId("r", 2), {**task_config, "task.number": "2"}, connector_config=invalid) is None
    (_, task, failed, trace) = seen[-1]
    assert (task, failed) == (2, State.FAILED)
    assert trace is not None and "Invalid value '${env:HW_TEST_NOT_A_PORT}' for configuration port" in trace
    assert SECRET not in trace
    worker.stop()
