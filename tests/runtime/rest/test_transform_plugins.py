"""``/connector-plugins`` for transformations, predicates and converters (KIP-66, KIP-585, KIP-769) through the
REST API of a standalone herder over the in-memory transport: ``connectorsOnly=false`` lists them after the
connectors in Kafka Connect's order and shape, ``/{name}/config`` gives their keys, and validation reports each
``transforms.<alias>.*`` key's errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker

INSERT_FIELD = "org.apache.kafka.connect.transforms.InsertField$Value"
SOURCE = {"name": "c", "connector.class": "monitorable-source", "topic": "t"}
VALIDATE = "/connector-plugins/monitorable-source/config/validate"
ALLOWED = {"connector.class.allowed.modules": "support"}
TYPE_ORDER = ["source", "sink", "transformation", "predicate", "converter", "header_converter"]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    worker = Worker(ALLOWED, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    herder = StandaloneHerder(worker)
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()
    herder.stop()


def test_connectors_only_is_the_default(http: httpx.Client) -> None:
    default = http.get("/connector-plugins").json()
    assert default == http.get("/connector-plugins?connectorsOnly=true").json()
    assert {plugin["type"] for plugin in default} == {"source", "sink"}


def test_all_plugins_follow_the_connectors_by_type_then_class(http: httpx.Client) -> None:
    connectors = http.get("/connector-plugins").json()
    plugins = http.get("/connector-plugins?connectorsOnly=false").json()
    assert plugins[: len(connectors)] == connectors
    others = plugins[len(connectors) :]
    types = [TYPE_ORDER.index(plugin["type"]) for plugin in others]
    assert types == sorted(types), "transformations, predicates, converters, header converters"
    for kind in ("transformation", "predicate", "converter", "header_converter"):
        names = [plugin["class"] for plugin in others if plugin["type"] == kind]
        assert names == sorted(names) and names, kind
    assert all(set(plugin) == {"class", "type", "version"} for plugin in others)
    listed = {(plugin["class"], plugin["type"]) for plugin in others}
    assert (INSERT_FIELD, "transformation") in listed
    assert ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate") in listed
    assert ("org.apache.kafka.connect.json.JsonConverter", "converter") in listed
    assert ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter") in listed
    assert ("org.apache.kafka.connect.storage.StringConverter", "header_converter") in listed
    assert ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "converter") not in listed
    assert ("support.installed_transforms.UpperTopic", "transformation") in listed, "an installed transformation"
    assert ("support.installed_transforms.TopicIsUpper", "predicate") in listed, "an installed predicate"
    assert ("headwater.reference_connectors.jdbc_cdc.unwrap.JdbcCdcUnwrap", "transformation") in listed
    assert len(listed) == len(others), "each class once per type"


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        (INSERT_FIELD, {"topic.field", "static.field", "static.value"}),
        ("InsertField$Value", {"topic.field", "static.field", "static.value"}),
        ("upper-topic", {"suffix"}),
        ("jdbc-cdc-unwrap", {"delete.handling.mode", "add.fields"}),
        ("support.installed_transforms.UpperTopic", {"suffix"}),
        ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", {"pattern"}),
        ("org.apache.kafka.connect.json.JsonConverter", {"schemas.enable"}),
        ("string", {"converter.encoding"}),
    ],
)
def test_a_plugins_config_lists_its_own_keys(http: httpx.Client, name: str, keys: set[str]) -> None:
    response = http.get(f"/connector-plugins/{name}/config")
    assert response.status_code == 200, response.text
    found = {info["name"]: info for info in response.json()}
    assert keys <= set(found)
    connector_keys = {info["name"] for info in http.get("/connector-plugins/monitorable-source/config").json()}
    assert set(next(iter(found.values()))) == set(http.get("/connector-plugins/monitorable-source/config").json()[0])
    assert not connector_keys & set(found)


def test_an_unknown_plugins_config_is_not_found(http: httpx.Client) -> None:
    assert http.get("/connector-plugins/org.apache.kafka.connect.transforms.NoSuch/config").status_code == 404
    assert http.get("/connector-plugins/no-such-transform/config").status_code == 404


def validate(http: httpx.Client, **config: Any) -> tuple[int, dict[str, Any]]:
    response = http.put(VALIDATE, json={**SOURCE, **config})
    assert response.status_code == 200, response.text
    infos = response.json()
    return infos["error_count"], {info["value"]["name"]: info for info in infos["configs"]}


def test_validate_reports_a_missing_transform_type(http: httpx.Client) -> None:
    count, configs = validate(http, transforms="a")
    assert count == 1
    assert configs["transforms.a.type"]["value"]["errors"] == [
        "Invalid value null for configuration transforms.a.type: Missing required configuration with no default value"
    ]


def test_validate_reports_an_unknown_transform_type(http: httpx.Client) -> None:
    count, configs = validate(http, transforms="a", **{"transforms.a.type": "example_smts.NoSuch"})
    assert count == 1
    [error] = configs["transforms.a.type"]["value"]["errors"]
    assert "example_smts.NoSuch" in error and "not imported from module example_smts" in error


def test_validate_reports_a_bad_setting_value(http: httpx.Client) -> None:
    config = {"transforms.r.type": "RegexRouter", "transforms.r.regex": "(unclosed", "transforms.r.replacement": "x"}
    count, configs = validate(http, transforms="r", **config)
    assert count == 1
    [error] = configs["transforms.r.regex"]["value"]["errors"]
    assert "transforms.r.regex" in error


def test_validate_reports_a_predicate_that_is_not_listed(http: httpx.Client) -> None:
    config = {"transforms.f.type": "Filter", "transforms.f.predicate": "p", "predicates": "q"}
    config |= {"predicates.q.type": "RecordIsTombstone"}
    count, configs = validate(http, transforms="f", **config)
    assert count == 1
    [error] = configs["transforms.f.predicate"]["value"]["errors"]
    assert "Not a predicate alias listed in predicates (listed: q)" in error


def test_validate_of_a_good_chain_shows_its_keys_by_alias(http: httpx.Client) -> None:
    config = {
        "transforms.ins.type": INSERT_FIELD,
        "transforms.ins.static.field": "origin",
        "transforms.ins.static.value": "here",
        "transforms.ins.predicate": "upper",
        "transforms.up.type": "upper-topic",
        "predicates": "upper",
        "predicates.upper.type": "topic-is-upper",
    }
    response = http.put(VALIDATE, json={**SOURCE, "transforms": "up,ins", **config})
    infos = response.json()
    assert infos["error_count"] == 0, response.text
    configs = {info["value"]["name"]: info for info in infos["configs"]}
    assert configs["transforms.ins.static.field"]["definition"]["group"] == "Transforms: ins"
    assert configs["transforms.ins.static.value"]["value"]["value"] == "here"
    assert configs["transforms.ins.topic.field"]["definition"]["group"] == "Transforms: ins"
    assert configs["transforms.up.suffix"]["definition"]["group"] == "Transforms: up"
    assert configs["predicates.upper.type"]["definition"]["group"] == "Predicates: upper"
    assert {"Transforms: ins", "Transforms: up", "Predicates: upper"} <= set(infos["groups"])
