"""Where the REST API follows Kafka Connect's (4.3) to the letter, on an in-memory worker (no broker): a trailing
slash is the same resource (never a redirect), a body must be JSON (415), a created connector's ``Location`` is
absolute, statuses carry the plugin's version, definitions their ``order_in_group``, and a connector created PAUSED
or paused from STOPPED has no task until it is resumed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type
from support.rest_worker import MemoryRestWorker, wait_until

SOURCE = {"connector.class": "monitorable-source", "topic": "t", "max.messages": "0"}
VERSIONED = {"connector.class": "tests.runtime.rest.test_rest_parity:VersionedSource", "tasks.max": "2"}


class VersionedTask(SourceTask):
    def version(self) -> str:
        return "7.1-task"

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Sequence[SourceRecord]:
        return []


class VersionedSource(SourceConnector):
    def version(self) -> str:
        return "7.1"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("first", Type.STRING, "a", Importance.LOW, "First of its group.", group="Mine")
            .define("second", Type.STRING, "b", Importance.LOW, "Second of its group.", group="Mine")
        )

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return VersionedTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]


# ---- trailing slashes ----------------------------------------------------------------------------------------


def test_a_post_with_a_trailing_slash_creates_the_connector(memory_rest: MemoryRestWorker) -> None:
    response = memory_rest.http.post("/connectors/", json={"name": "slashed", "config": SOURCE})
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "slashed"
    assert memory_rest.http.get("/connectors").json() == ["slashed"]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/connectors/", 200),
        ("GET", "/connectors/c/", 200),
        ("GET", "/connectors/c/status/", 200),
        ("GET", "/connectors/c/tasks/", 200),
        ("GET", "/connectors/c/config/", 200),
        ("PUT", "/connectors/c/pause/", 202),
        ("PUT", "/connectors/c/resume/", 202),
        ("GET", "/connector-plugins/", 200),
        ("GET", "/health/", 200),
        ("GET", "/connectors/missing/", 404),
    ],
)
def test_every_route_answers_with_a_trailing_slash_and_never_redirects(
    memory_rest: MemoryRestWorker, method: str, path: str, status: int
) -> None:
    assert memory_rest.http.post("/connectors", json={"name": "c", "config": SOURCE}).status_code == 201
    response = memory_rest.http.request(method, path)
    assert response.status_code == status, response.text
    without = memory_rest.http.request(method, path.rstrip("/"))
    assert without.status_code == status, without.text


# ---- request bodies must be JSON -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "named"),
    [({"Content-Type": "text/plain"}, "Content-Type 'text/plain'"), ({}, "no Content-Type")],
)
def test_a_body_that_is_not_json_is_refused_with_415(
    memory_rest: MemoryRestWorker, headers: dict[str, str], named: str
) -> None:
    body = b'{"name": "plain", "config": {"connector.class": "monitorable-source", "topic": "t"}}'
    response = memory_rest.http.post("/connectors", content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert response.json() == {
        "error_code": 415,
        "message": f"Unsupported media type: a request body must be application/json, got {named}",
    }
    assert memory_rest.http.get("/connectors").json() == [], "nothing was created"


def test_json_with_a_charset_and_requests_without_a_body_are_taken(memory_rest: MemoryRestWorker) -> None:
    body = b'{"name": "charset", "config": {"connector.class": "monitorable-source", "topic": "t"}}'
    response = memory_rest.http.post(
        "/connectors", content=body, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 201, response.text
    assert memory_rest.http.put("/connectors/charset/pause").status_code == 202


# ---- Location, versions, order_in_group ----------------------------------------------------------------------


def test_a_created_connector_is_located_by_its_absolute_uri(memory_rest: MemoryRestWorker) -> None:
    created = memory_rest.http.post("/connectors", json={"name": "a b", "config": SOURCE})
    assert created.status_code == 201, created.text
    assert created.headers["Location"] == f"{memory_rest.url}/connectors/a%20b"
    assert memory_rest.http.get(created.headers["Location"]).json()["name"] == "a b"
    put = memory_rest.http.put("/connectors/other/config", json=SOURCE)
    assert put.status_code == 201, put.text
    assert put.headers["Location"] == f"{memory_rest.url}/connectors/other"


def test_statuses_carry_the_versions_of_the_connector_and_its_tasks(memory_rest: MemoryRestWorker) -> None:
    memory_rest.http.post("/connectors", json={"name": "versioned", "config": VERSIONED})

    def running() -> dict[str, Any] | None:
        found: dict[str, Any] = memory_rest.http.get("/connectors/versioned/status").json()
        return found if [task["state"] for task in found.get("tasks", [])] == ["RUNNING", "RUNNING"] else None

    status = wait_until(running, "both tasks running")
    assert status["connector"]["version"] == "7.1"
    assert [task["version"] for task in status["tasks"]] == ["7.1-task", "7.1-task"]
    assert memory_rest.http.get("/connectors/versioned/tasks/1/status").json()["version"] == "7.1-task"
    expanded = memory_rest.http.get("/connectors?expand=status").json()
    assert expanded["versioned"]["status"]["connector"]["version"] == "7.1"


def test_definitions_number_their_keys_within_each_group(memory_rest: MemoryRestWorker) -> None:
    validated = memory_rest.http.put(
        "/connector-plugins/tests.runtime.rest.test_rest_parity:VersionedSource/config/validate", json=VERSIONED
    )
    assert validated.status_code == 200, validated.text
    definitions = {config["definition"]["name"]: config["definition"] for config in validated.json()["configs"]}
    assert "order" not in definitions["first"]
    assert (definitions["first"]["order_in_group"], definitions["second"]["order_in_group"]) == (1, 2)
    grouped: dict[str, list[int]] = {}
    for definition in definitions.values():
        grouped.setdefault(definition["group"], []).append(definition["order_in_group"])
    for group, orders in grouped.items():
        assert orders == (list(range(1, len(orders) + 1)) if group else [-1] * len(orders)), group
    own = memory_rest.http.get("/connector-plugins/tests.runtime.rest.test_rest_parity:VersionedSource/config")
    assert [(d["name"], d["order_in_group"]) for d in own.json()] == [("first", 1), ("second", 2)]


# ---- no tasks for a connector that never ran STARTED ---------------------------------------------------------


def tasks_of(worker: MemoryRestWorker, name: str) -> tuple[list[Any], list[Any], list[Any]]:
    """The connector's task configs, its tasks in its info and in its status."""
    return (
        worker.http.get(f"/connectors/{name}/tasks").json(),
        worker.http.get(f"/connectors/{name}").json()["tasks"],
        worker.http.get(f"/connectors/{name}/status").json()["tasks"],
    )


def test_a_connector_created_paused_lists_no_task_until_resumed(memory_rest: MemoryRestWorker) -> None:
    created = memory_rest.http.post(
        "/connectors", json={"name": "held", "config": VERSIONED, "initial_state": "PAUSED"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["tasks"] == []
    wait_until(
        lambda: memory_rest.http.get("/connectors/held/status").json()["connector"]["state"] == "PAUSED", "PAUSED"
    )
    memory_rest.herder.tick()  # a reconfiguration the connector asked for is not served while it is PAUSED
    assert tasks_of(memory_rest, "held") == ([], [], [])
    assert memory_rest.http.put("/connectors/held/resume").status_code == 202
    wait_until(lambda: len(tasks_of(memory_rest, "held")[2]) == 2, "two tasks once resumed")


def test_pausing_a_stopped_connector_lists_no_task_until_resumed(memory_rest: MemoryRestWorker) -> None:
    created = memory_rest.http.post(
        "/connectors", json={"name": "idle", "config": VERSIONED, "initial_state": "STOPPED"}
    )
    assert created.status_code == 201, created.text
    assert memory_rest.http.put("/connectors/idle/pause").status_code == 202
    wait_until(
        lambda: memory_rest.http.get("/connectors/idle/status").json()["connector"]["state"] == "PAUSED", "PAUSED"
    )
    memory_rest.herder.tick()
    assert tasks_of(memory_rest, "idle") == ([], [], [])
    assert memory_rest.http.put("/connectors/idle/resume").status_code == 202
    wait_until(lambda: len(tasks_of(memory_rest, "idle")[2]) == 2, "two tasks once resumed")


def test_a_plugin_config_asked_for_another_version_is_refused_naming_the_installed_one(
    memory_rest: MemoryRestWorker,
) -> None:
    path = "/connector-plugins/tests.runtime.rest.test_rest_parity:VersionedSource/config"
    for version in ("latest", "7.1"):
        assert memory_rest.http.get(path, params={"version": version}).status_code == 200, version
    refused = memory_rest.http.get(path, params={"version": "[8.0,9.0)"})
    assert refused.status_code == 400, refused.text
    assert "no version '[8.0,9.0)': the installed version is 7.1" in refused.json()["message"]
    transform = memory_rest.http.get(
        "/connector-plugins/org.apache.kafka.connect.transforms.InsertField$Value/config", params={"version": "0.1"}
    )
    assert transform.status_code == 400, transform.text
