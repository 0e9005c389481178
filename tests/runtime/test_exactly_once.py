"""Exactly-once source keys (KIP-618): the worker's ``exactly.once.source.support`` and a source connector's
``exactly.once.support``, ``transaction.boundary``, ``transaction.boundary.interval.ms`` and
``offsets.storage.topic`` are validated with Kafka Connect's validators and ``DistributedHerder`` checks; until
Headwater delivers exactly once, every value that asks for it is refused naming its key (validate, create, REST)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from headwater.harness import MonitorableSourceConnector
from headwater.runtime import exactly_once
from headwater.runtime.distributed import DISTRIBUTED_CONFIG
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.standalone import STANDALONE_CONFIG
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.validation import DEFAULT_WORKER_CONFIG, validate_connector_config
from headwater.runtime.worker import Worker
from headwater.sdk import (
    ConfigError,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceTaskContext,
)

SOURCE = {"connector.class": "monitorable-source", "name": "src", "topic": "t"}
ENABLED = {**DEFAULT_WORKER_CONFIG, exactly_once.WORKER_SUPPORT: "enabled"}
"""A worker with the support enabled, which no worker config can say yet: Kafka's checks for when it can."""
NOT_YET = "exactly-once source support is not implemented yet in Headwater"


def errors_by_key(infos: Mapping[str, Any]) -> dict[str, list[str]]:
    return {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"] if info["value"]["errors"]}


class Answering(MonitorableSourceConnector):
    """A source connector answering what it is told to about exactly-once delivery."""

    def __init__(self, support: Any = None, boundaries: Any = ConnectorTransactionBoundaries.UNSUPPORTED) -> None:
        super().__init__()
        self.support, self.boundaries = support, boundaries
        self.asked: list[Mapping[str, str]] = []

    def exactly_once_support(self, config: Mapping[str, str]) -> Any:
        self.asked.append(config)
        if isinstance(self.support, Exception):
            raise self.support
        return self.support

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> Any:
        return self.boundaries


# ---- the SDK --------------------------------------------------------------------------------------------------------


def test_a_source_connector_cannot_tell_about_exactly_once_and_cannot_define_transactions_by_default() -> None:
    connector = MonitorableSourceConnector()
    assert connector.exactly_once_support(SOURCE) is None
    assert connector.can_define_transaction_boundaries(SOURCE) is ConnectorTransactionBoundaries.UNSUPPORTED
    assert SourceTaskContext.transaction_context is None, "no transactions until Headwater delivers exactly once"


# ---- the worker key -------------------------------------------------------------------------------------------------

DISTRIBUTED = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}


@pytest.mark.parametrize(("definition", "base"), [(STANDALONE_CONFIG, {}), (DISTRIBUTED_CONFIG, DISTRIBUTED)])
def test_the_worker_key_defaults_to_disabled_and_takes_nothing_else_yet(definition: Any, base: dict[str, str]) -> None:
    assert definition.parse(base)[exactly_once.WORKER_SUPPORT] == "disabled"
    assert definition.parse({**base, exactly_once.WORKER_SUPPORT: "DISABLED"})[exactly_once.WORKER_SUPPORT]
    for value in ("enabled", "preparing"):
        with pytest.raises(ConfigError, match=f"{exactly_once.WORKER_SUPPORT}.*{NOT_YET}.*distributed workers only"):
            definition.parse({**base, exactly_once.WORKER_SUPPORT: value})
    with pytest.raises(ConfigError, match="String must be one of: disabled, preparing, enabled"):
        definition.parse({**base, exactly_once.WORKER_SUPPORT: "on"})


# ---- the connector keys ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"exactly.once.support": "requested"},
        {"exactly.once.support": "REQUESTED", "transaction.boundary": "Poll"},
    ],
)
def test_values_that_ask_for_nothing_exactly_once_are_accepted(props: dict[str, str]) -> None:
    assert validate_connector_config({**SOURCE, **props})["error_count"] == 0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("exactly.once.support", "always", "String must be one of: requested, required"),
        ("transaction.boundary", "batch", "String must be one of: poll, interval, connector"),
        ("transaction.boundary.interval.ms", "-1", "Value must be at least 0"),
        ("transaction.boundary.interval.ms", "soon", "soon"),
        ("offsets.storage.topic", " ", "String must be non-empty"),
    ],
)
def test_a_bad_value_gets_kafkas_validator_message_only(key: str, value: str, message: str) -> None:
    errors = errors_by_key(validate_connector_config({**SOURCE, key: value}))
    assert list(errors) == [key]
    assert len(errors[key]) == 1 and message in errors[key][0]


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"transaction.boundary": "interval"}, "transaction.boundary"),
        ({"transaction.boundary": "connector"}, "transaction.boundary"),
        ({"transaction.boundary.interval.ms": "100"}, "transaction.boundary.interval.ms"),
        ({"offsets.storage.topic": "my-offsets"}, "offsets.storage.topic"),
    ],
)
def test_every_value_that_asks_for_exactly_once_is_refused_naming_its_key(props: dict[str, str], key: str) -> None:
    errors = errors_by_key(validate_connector_config({**SOURCE, **props}))
    assert list(errors) == [key]
    assert errors[key][-1].startswith(f"{key}: {NOT_YET}; ")


def test_required_on_a_worker_without_the_support_gets_kafkas_message_and_the_refusal() -> None:
    errors = errors_by_key(validate_connector_config({**SOURCE, "exactly.once.support": "required"}))
    assert errors == {
        "exactly.once.support": [
            "This worker does not have exactly-once source support enabled.",
            f"exactly.once.support: {NOT_YET}; set it to requested or remove it",
        ]
    }


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "does not implement the API required for preflight validation of exactly-once source support"),
        (ExactlyOnceSupport.UNSUPPORTED, "does not support exactly-once semantics with the provided configuration."),
        (ValueError("no database"), "An unexpected error occurred during validation: no database"),
        (ValueError(" "), "An unexpected error occurred during validation; please see the worker logs"),
    ],
)
def test_required_on_a_worker_with_the_support_asks_the_connector_as_kafka_does(answer: Any, message: str) -> None:
    connector = Answering(support=answer)
    props = {**SOURCE, "exactly.once.support": "required", "tasks.max": 2}
    found = exactly_once.problems(props, connector, ENABLED, {})
    assert message in found["exactly.once.support"][0]
    assert found["exactly.once.support"][1].endswith(f"{NOT_YET}; set it to requested or remove it")
    assert connector.asked == [{**SOURCE, "exactly.once.support": "required", "tasks.max": "2"}], "raw strings"


def test_a_connector_that_can_deliver_exactly_once_is_still_refused_until_headwater_can() -> None:
    props = {**SOURCE, "exactly.once.support": "required"}
    found = exactly_once.problems(props, Answering(ExactlyOnceSupport.SUPPORTED), ENABLED, {})
    assert found == {"exactly.once.support": [f"exactly.once.support: {NOT_YET}; set it to requested or remove it"]}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (ConnectorTransactionBoundaries.UNSUPPORTED, "does not support connector-defined transaction boundaries"),
        (None, "has returned a null value from its can_define_transaction_boundaries method"),
    ],
)
def test_connector_boundaries_are_refused_for_a_connector_that_cannot_define_them(answer: Any, message: str) -> None:
    props = {**SOURCE, "transaction.boundary": "connector"}
    for worker in (DEFAULT_WORKER_CONFIG, ENABLED):  # Kafka asks whatever the worker's support
        found = exactly_once.problems(props, Answering(boundaries=answer), worker, {})
        assert message in found["transaction.boundary"][0]
        assert found["transaction.boundary"][1].endswith(f"{NOT_YET}; set it to poll or remove it")


def test_a_key_with_a_validator_error_is_not_asked_about_again() -> None:
    connector = Answering()
    props = {**SOURCE, "exactly.once.support": "required", "offsets.storage.topic": "x"}
    errors = {"exactly.once.support": ["bad"], "offsets.storage.topic": ["bad"]}
    assert exactly_once.problems(props, connector, ENABLED, errors) == {}
    assert connector.asked == []


def test_the_keys_belong_to_source_connectors_only() -> None:
    infos = validate_connector_config(
        {"connector.class": "monitorable-sink", "topics": "t", "exactly.once.support": "requested"}
    )
    message = "exactly.once.support is a source connector configuration: a sink connector would ignore it"
    assert errors_by_key(infos)["exactly.once.support"][0].startswith(message)


def test_the_source_definition_has_kafkas_defaults() -> None:
    parsed = exactly_once.SOURCE_CONFIG.parse({})
    assert parsed == {
        "exactly.once.support": "requested",
        "transaction.boundary": "poll",
        "transaction.boundary.interval.ms": None,
        "offsets.storage.topic": None,
    }


# ---- create, over the herder and REST -------------------------------------------------------------------------------


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    herder = StandaloneHerder(Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    yield herder
    herder.stop()


def test_create_refuses_a_config_asking_for_exactly_once_and_creates_nothing(herder: StandaloneHerder) -> None:
    with pytest.raises(InvalidConfigError, match=f"transaction.boundary: {NOT_YET}; set it to poll"):
        herder.put_connector_config("src", {**SOURCE, "transaction.boundary": "interval"})
    assert herder.connectors() == []
    assert herder.put_connector_config("src", {**SOURCE, "exactly.once.support": "requested"})


def test_over_rest_create_answers_400_naming_the_key_and_validate_reports_it(herder: StandaloneHerder) -> None:
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as rest:
            asked = {**SOURCE, "exactly.once.support": "required"}
            refused = rest.post("/connectors", json={"name": "src", "config": asked})
            assert refused.status_code == 400
            assert "This worker does not have exactly-once source support enabled." in refused.json()["message"]
            assert f"exactly.once.support: {NOT_YET}" in refused.json()["message"]
            assert rest.get("/connectors").json() == []
            validated = rest.put("/connector-plugins/monitorable-source/config/validate", json=asked).json()
            assert validated["error_count"] == 2
            assert list(errors_by_key(validated)) == ["exactly.once.support"]
    finally:
        server.stop()
