"""``/connector-plugins`` over HTTP: the installed connectors, their config keys, and validation in Kafka
Connect's ``ConfigInfos`` shape."""

from __future__ import annotations

from support.rest_worker import MemoryRestWorker

SOURCE_CLASS = "headwater.harness.monitorable.MonitorableSourceConnector"
DEFINITION_KEYS = {
    "name",
    "type",
    "required",
    "default_value",
    "importance",
    "documentation",
    "group",
    "order_in_group",
    "width",
    "display_name",
    "dependents",
}


def test_lists_the_installed_connectors(live_rest: MemoryRestWorker) -> None:
    plugins = live_rest.http.get("/connector-plugins").json()
    assert {"class": SOURCE_CLASS, "type": "source", "version": "0.0.0"} in plugins
    assert {"class": "headwater.harness.monitorable.MonitorableSinkConnector", "type": "sink", "version": "0.0.0"} in (
        plugins
    )
    assert [plugin["class"] for plugin in plugins] == sorted(plugin["class"] for plugin in plugins)
    every = live_rest.http.get("/connector-plugins?connectorsOnly=false").json()
    assert every[: len(plugins)] == plugins, "the connectors first, then transformations, predicates, converters"
    assert {plugin["type"] for plugin in every[len(plugins) :]} == {
        "transformation",
        "predicate",
        "converter",
        "header_converter",
    }


def test_plugin_config_lists_the_connectors_own_keys(live_rest: MemoryRestWorker) -> None:
    response = live_rest.http.get("/connector-plugins/monitorable-source/config")
    assert response.status_code == 200
    keys = {info["name"]: info for info in response.json()}
    assert set(keys) == {"topic", "messages.per.poll", "max.messages"}
    assert set(keys["topic"]) == DEFINITION_KEYS
    assert keys["messages.per.poll"]["default_value"] == "1"
    assert keys["topic"]["required"] is True
    unknown = live_rest.http.get("/connector-plugins/no.such.Plugin/config")
    assert unknown.status_code == 404


def test_validate_reports_each_key_with_its_errors(live_rest: MemoryRestWorker) -> None:
    config = {"connector.class": "monitorable-source", "tasks.max": "zero", "topic": "t", "max.messages": None}
    response = live_rest.http.put("/connector-plugins/monitorable-source/config/validate", json=config)
    assert response.status_code == 200
    infos = response.json()
    assert set(infos) == {"name", "error_count", "groups", "configs"}
    assert infos["name"] == "monitorable-source"
    assert infos["error_count"] == 3, "tasks.max, max.messages and the missing name"
    values = {info["value"]["name"]: info for info in infos["configs"]}
    assert set(values["tasks.max"]["definition"]) == DEFINITION_KEYS
    assert values["tasks.max"]["value"] == {
        "name": "tasks.max",
        "value": "zero",
        "recommended_values": [],
        "errors": ["Invalid value 'zero' for configuration tasks.max: Expected value to be an integer"],
        "visible": True,
    }
    assert values["max.messages"]["value"]["errors"] == ["Null value can not be supplied as the configuration value."]
    assert values["name"]["value"]["errors"] == [
        "Invalid value null for configuration name: Missing required configuration with no default value"
    ]
    assert values["topic"]["value"]["errors"] == []
    assert values["topic"]["value"]["value"] == "t"


def test_validate_of_a_valid_config_has_no_errors_and_fills_in_the_class(live_rest: MemoryRestWorker) -> None:
    response = live_rest.http.put(
        f"/connector-plugins/{SOURCE_CLASS}/config/validate", json={"name": "n", "topic": "t"}
    )
    assert response.status_code == 200
    assert response.json()["error_count"] == 0
    assert response.json()["name"] == SOURCE_CLASS


def test_validate_with_another_connector_class_is_refused(live_rest: MemoryRestWorker) -> None:
    response = live_rest.http.put(
        "/connector-plugins/monitorable-source/config/validate", json={"connector.class": "monitorable-sink"}
    )
    assert response.status_code == 400
    assert response.json() == {
        "error_code": 400,
        "message": "Included connector type monitorable-sink does not match request type monitorable-source",
    }
    alias = live_rest.http.put(
        "/connector-plugins/monitorable-source/config/validate",
        json={"connector.class": SOURCE_CLASS, "name": "n", "topic": "t"},
    )
    assert alias.status_code == 200
