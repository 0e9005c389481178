"""The ``topic.creation.*`` keys of a source connector (KIP-158): the groups they define, which group a topic gets,
and what validate and create say about a config, as Kafka Connect's ``SourceConnectorConfig`` and
``TopicCreationGroup`` do, plus the keys Kafka Connect would ignore, which Headwater refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from headwater.runtime.config.topic_creation import configured_groups
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, check_connector_config, validate_connector_config
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker

SOURCE = {"connector.class": "monitorable-source", "name": "src", "topic": "t"}
DEFAULTS = {"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "3"}


def errors(props: dict[str, Any], **worker: Any) -> dict[str, list[str]]:
    """The errors validate reports for a source config, by key."""
    infos = validate_connector_config({**SOURCE, **props}, {**DEFAULT_WORKER_CONFIG, **worker})
    return {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"] if info["value"]["errors"]}


def definitions(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    infos = validate_connector_config({**SOURCE, **props})
    return {info["definition"]["name"]: info["definition"] for info in infos["configs"] if info["definition"]}


def test_the_groups_come_in_order_with_the_default_group_last_and_other_keys_as_topic_configs() -> None:
    groups = configured_groups(
        {
            **DEFAULTS,
            "topic.creation.default.cleanup.policy": "compact",
            "topic.creation.groups": "b, a, default, b",  # default and repeats are dropped, as Kafka's enrich does
            "topic.creation.a.include": "a-.*",
            "topic.creation.a.partitions": "5",
            "topic.creation.a.retention.ms": "1000",
            "topic.creation.b.include": "b-.*, bb",
            "topic.creation.b.replication.factor": "-1",
        }
    )
    assert [g.name for g in groups] == ["b", "a", "default"]
    b, a, default = groups
    assert (b.partitions, b.replication_factor, dict(b.config)) == (3, -1, {}), "b takes the default's partitions"
    assert (a.partitions, a.replication_factor, dict(a.config)) == (5, 1, {"retention.ms": "1000"})
    assert default.new_topic("x") == NewTopic("x", 3, 1, {"cleanup.policy": "compact"})


def test_a_topic_matches_a_group_over_its_whole_name_and_an_exclude_pattern_wins() -> None:
    [group, default] = configured_groups(
        {
            **DEFAULTS,
            "topic.creation.groups": "g",
            "topic.creation.g.include": "orders.*, audit",
            "topic.creation.g.exclude": ".*-test",
        }
    )
    assert group.matches("orders") and group.matches("orders-eu") and group.matches("audit")
    assert not group.matches("old-orders"), "the whole name must match, as Java's Pattern.matches"
    assert not group.matches("audit-log")
    assert not group.matches("orders-test"), "exclusion wins over inclusion"
    assert default.matches("anything")


def test_a_group_without_include_matches_no_topic() -> None:
    [group, _] = configured_groups({**DEFAULTS, "topic.creation.groups": "g", "topic.creation.g.partitions": "2"})
    assert not group.matches("t")


def test_both_default_settings_are_required_once_any_topic_creation_key_is_set() -> None:
    missing = "Missing required configuration with no default value"
    found = errors({"topic.creation.default.cleanup.policy": "compact"})
    assert any(missing in m for m in found["topic.creation.default.partitions"])
    assert any(missing in m for m in found["topic.creation.default.replication.factor"])
    assert errors({**DEFAULTS, "topic.creation.default.cleanup.policy": "compact"}) == {}
    assert errors({}) == {}, "no topic.creation key: topic creation is off and nothing is required"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("topic.creation.default.partitions", "0", "Number of partitions must be positive, or -1"),
        ("topic.creation.default.partitions", "-2", "Number of partitions must be positive, or -1"),
        ("topic.creation.default.replication.factor", "0", "Replication factor must be positive"),
        ("topic.creation.g.partitions", "0", "Number of partitions must be positive, or -1"),
        ("topic.creation.g.include", "a(b", "Syntax error in regular expression"),
        ("topic.creation.g.exclude", "[", "Syntax error in regular expression"),
        ("topic.creation.groups", "g,g", "Duplicate alias provided."),
    ],
)
def test_a_bad_value_is_an_error_on_its_key(key: str, value: str, message: str) -> None:
    found = errors({**DEFAULTS, "topic.creation.groups": "g", key: value})
    assert list(found) == [key]
    assert any(message in m for m in found[key]), found


def test_minus_one_takes_the_brokers_default() -> None:
    assert errors({"topic.creation.default.replication.factor": "-1", "topic.creation.default.partitions": "-1"}) == {}


def test_validate_lists_the_keys_of_each_group_in_its_own_group() -> None:
    found = definitions({**DEFAULTS, "topic.creation.groups": "g"})
    assert found["topic.creation.groups"]["group"] == "Topic Creation"
    assert found["topic.creation.default.partitions"]["required"] is True
    assert found["topic.creation.g.partitions"]["group"] == "Topic Creation: g"
    assert found["topic.creation.g.partitions"]["default_value"] == "3", "the default group's partitions"
    assert found["topic.creation.g.include"]["default_value"] == ""


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("topic.creation.other.partitions", "there is no topic creation group 'other'"),
        ("topic.creation.default.include", "the default topic creation group matches every topic"),
        ("topic.creation.default.exclude", "the default topic creation group matches every topic"),
        ("topic.creation.default", "names no setting of a topic creation group"),
    ],
)
def test_a_key_kafka_connect_would_ignore_is_refused(key: str, message: str) -> None:
    found = errors({**DEFAULTS, key: "2"})
    assert list(found) == [key]
    assert message in found[key][0] and "would be ignored" in found[key][0], found
    with pytest.raises(InvalidConfigError) as refused:
        check_connector_config({**SOURCE, **DEFAULTS, key: "2"}, DEFAULT_WORKER_CONFIG)
    assert message in str(refused.value)


def test_every_topic_creation_key_is_refused_where_the_worker_does_not_enable_topic_creation() -> None:
    found = errors(DEFAULTS, **{"topic.creation.enable": False})
    assert set(found) == set(DEFAULTS)
    assert all("topic.creation.enable is false" in messages[0] for messages in found.values())
    assert errors({}, **{"topic.creation.enable": False}) == {}


@pytest.fixture
def rest() -> Iterator[httpx.Client]:
    herder = StandaloneHerder(Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()
    herder.stop()


def test_over_rest_validate_reports_and_create_refuses_a_bad_topic_creation_or_topics_config(
    rest: httpx.Client,
) -> None:
    bad = {**SOURCE, "topic.creation.default.partitions": "0"}
    validated = rest.put("/connector-plugins/monitorable-source/config/validate", json=bad).json()
    by_key = {c["value"]["name"]: c["value"]["errors"] for c in validated["configs"] if c["value"]["errors"]}
    assert validated["error_count"] == 2
    assert "Missing required configuration" in by_key["topic.creation.default.replication.factor"][0]
    assert "Number of partitions must be positive" in by_key["topic.creation.default.partitions"][0]
    refused = rest.post("/connectors", json={"name": "src", "config": bad})
    assert refused.status_code == 400 and "topic.creation.default.partitions" in refused.json()["message"]
    sink = {"connector.class": "monitorable-sink", "topics": "a", "topics.regex": "a.*"}
    refused = rest.post("/connectors", json={"name": "sink", "config": sink})
    assert refused.status_code == 400 and "mutually exclusive" in refused.json()["message"]
    created = rest.post("/connectors", json={"name": "src", "config": {**SOURCE, **DEFAULTS}})
    assert created.status_code == 201, created.text


def test_a_group_name_may_hold_dots() -> None:
    props = {**DEFAULTS, "topic.creation.groups": "eu.orders", "topic.creation.eu.orders.include": "eu-.*"}
    assert errors(props) == {}
    [group, _] = configured_groups({**props, "topic.creation.eu.orders.partitions": "2"})
    assert (group.name, group.partitions, group.matches("eu-1")) == ("eu.orders", 2, True)
