"""``GET /``, creating, reading, reconfiguring and deleting connectors over HTTP, with Kafka Connect's shapes and
status codes (Kafka Connect's ``RootResource``, ``ConnectorsResource`` and ``ConnectExceptionMapper``), on the
in-memory worker; the root's Kafka cluster id on the real broker."""

from __future__ import annotations

import pytest

from support.rest_worker import MemoryRestWorker, RestWorker, source_config

INVALID_PREFIX = "Connector configuration is invalid and contains the following"


@pytest.mark.kafka
def test_root_names_the_version_and_the_kafka_cluster(rest_worker: RestWorker) -> None:
    response = rest_worker.http.get("/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert body["version"] == "0.1.0"
    assert isinstance(body["kafka_cluster_id"], str) and body["kafka_cluster_id"]


def test_openapi_spec_is_served(live_rest: MemoryRestWorker) -> None:
    spec = live_rest.http.get("/openapi.json").json()
    assert "/connectors/{connector}/topics/reset" in spec["paths"]
    assert set(spec["paths"]["/connectors/{connector}/offsets"]) == {"get", "patch", "delete"}


def test_create_then_read_info_config_and_list(live_rest: MemoryRestWorker, unique_name: str) -> None:
    response = live_rest.create(unique_name, source_config(f"{unique_name}-t", tasks_max=2))
    assert response.headers["location"] == f"{live_rest.url}/connectors/{unique_name}"
    info = response.json()
    assert info == {
        "name": unique_name,
        "config": {**source_config(f"{unique_name}-t", tasks_max=2), "name": unique_name},
        "tasks": [{"connector": unique_name, "task": 0}, {"connector": unique_name, "task": 1}],
        "type": "source",
    }
    assert live_rest.http.get(f"/connectors/{unique_name}").json() == info
    assert live_rest.http.get(f"/connectors/{unique_name}/config").json() == info["config"]
    assert live_rest.http.get("/connectors").json() == [unique_name]


def test_list_expands_status_info_or_both(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    both = live_rest.http.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(both) == {unique_name}
    assert both[unique_name]["status"]["connector"]["state"] == "RUNNING"
    assert both[unique_name]["info"]["type"] == "source"
    only_info = live_rest.http.get("/connectors?expand=info").json()
    assert set(only_info[unique_name]) == {"info"}
    only_status = live_rest.http.get("/connectors?expand=status").json()
    assert set(only_status[unique_name]) == {"status"}


def test_creating_a_connector_twice_is_a_conflict(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("t"))
    response = live_rest.http.post("/connectors", json={"name": unique_name, "config": source_config("other")})
    assert response.status_code == 409
    assert response.json() == {"error_code": 409, "message": f"Connector {unique_name} already exists"}
    assert live_rest.http.get(f"/connectors/{unique_name}/config").json()["topic"] == "t"


def test_invalid_config_names_every_bad_key_and_creates_nothing(live_rest: MemoryRestWorker, unique_name: str) -> None:
    config = {"connector.class": "monitorable-source", "tasks.max": "many", "messages.per.poll": "-1"}
    response = live_rest.http.post("/connectors", json={"name": unique_name, "config": config})
    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == 400
    assert body["message"].startswith(f"{INVALID_PREFIX} 3 error(s):\n")
    for key in ("tasks.max", "messages.per.poll", "topic"):
        assert f"for configuration {key}:" in body["message"]
    assert body["message"].endswith("`/connector-plugins/{connectorType}/config/validate`")
    assert live_rest.http.get("/connectors").json() == []


def test_unknown_connector_class_is_a_bad_config(live_rest: MemoryRestWorker, unique_name: str) -> None:
    response = live_rest.http.put(f"/connectors/{unique_name}/config", json={"connector.class": "no-such-thing"})
    assert response.status_code == 400
    assert "for configuration connector.class" in response.json()["message"]


def test_put_config_creates_with_201_then_replaces_with_200(live_rest: MemoryRestWorker, unique_name: str) -> None:
    created = live_rest.http.put(f"/connectors/{unique_name}/config", json=source_config("first"))
    assert created.status_code == 201
    assert created.headers["location"] == f"{live_rest.url}/connectors/{unique_name}"
    replaced = live_rest.http.put(f"/connectors/{unique_name}/config", json=source_config("second", tasks_max=2))
    assert replaced.status_code == 200
    assert replaced.json()["config"]["topic"] == "second"
    assert len(replaced.json()["tasks"]) == 2


def test_put_config_with_another_name_is_refused(live_rest: MemoryRestWorker, unique_name: str) -> None:
    response = live_rest.http.put(f"/connectors/{unique_name}/config", json={**source_config("t"), "name": "x"})
    assert response.status_code == 400
    assert response.json()["message"] == (
        f"Connector name configuration (x) doesn't match connector name in the URL ({unique_name})"
    )


def test_invalid_replacement_leaves_the_running_connector_alone(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("kept"))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    response = live_rest.http.put(f"/connectors/{unique_name}/config", json={**source_config("x"), "tasks.max": 0})
    assert response.status_code == 400
    assert "for configuration tasks.max" in response.json()["message"]
    assert live_rest.http.get(f"/connectors/{unique_name}/config").json()["topic"] == "kept"
    assert live_rest.states(unique_name) == ("RUNNING", ["RUNNING"])


def test_patch_config_changes_and_removes_keys(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config("t", messages_per_poll=2))
    response = live_rest.http.patch(
        f"/connectors/{unique_name}/config", json={"topic": "patched", "messages.per.poll": None}
    )
    assert response.status_code == 200
    config = response.json()["config"]
    assert config["topic"] == "patched"
    assert "messages.per.poll" not in config
    assert config["max.messages"] == "3"


def test_patch_of_an_unknown_connector_is_not_found(live_rest: MemoryRestWorker) -> None:
    response = live_rest.http.patch("/connectors/nobody/config", json={"topic": "t"})
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Connector nobody not found"}


def test_delete_removes_config_and_status_and_a_second_delete_is_not_found(
    live_rest: MemoryRestWorker, unique_name: str
) -> None:
    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    response = live_rest.http.delete(f"/connectors/{unique_name}")
    assert response.status_code == 204
    assert response.content == b""
    assert live_rest.http.get("/connectors").json() == []
    status = live_rest.http.get(f"/connectors/{unique_name}/status")
    assert status.status_code == 404
    assert status.json()["message"] == f"No status found for connector {unique_name}"
    assert live_rest.herder.status_store.connector(unique_name) is None
    again = live_rest.http.delete(f"/connectors/{unique_name}")
    assert again.status_code == 404


def test_delete_keeps_source_offsets_for_a_connector_of_the_same_name(
    live_rest: MemoryRestWorker, unique_name: str
) -> None:
    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    partition = {"task.id": f"{unique_name}-0"}
    live_rest.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"saved": 2}}])
    assert live_rest.http.delete(f"/connectors/{unique_name}").status_code == 204
    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    offsets = live_rest.http.get(f"/connectors/{unique_name}/offsets").json()
    assert offsets == {"offsets": [{"partition": partition, "offset": {"saved": 2}}]}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/connectors/ghost"),
        ("GET", "/connectors/ghost/config"),
        ("GET", "/connectors/ghost/tasks"),
        ("DELETE", "/connectors/ghost"),
        ("PUT", "/connectors/ghost/pause"),
        ("PUT", "/connectors/ghost/resume"),
        ("PUT", "/connectors/ghost/stop"),
        ("POST", "/connectors/ghost/restart"),
        ("POST", "/connectors/ghost/tasks/0/restart"),
        ("GET", "/connectors/ghost/offsets"),
        ("DELETE", "/connectors/ghost/offsets"),
    ],
)
def test_unknown_connector_is_not_found(live_rest: MemoryRestWorker, method: str, path: str) -> None:
    response = live_rest.http.request(method, path)
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Connector ghost not found"}


def test_unknown_paths_methods_and_bad_bodies_get_error_bodies(live_rest: MemoryRestWorker) -> None:
    missing = live_rest.http.get("/no/such/path")
    assert missing.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    wrong_method = live_rest.http.delete("/connectors")
    assert wrong_method.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    not_json = live_rest.http.post("/connectors", content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    assert not_json.json()["error_code"] == 400
    nested = live_rest.http.put("/connectors/c/config", json={"connector.class": {"not": "a string"}})
    assert nested.status_code == 400
    assert "connector.class" in nested.json()["message"]
