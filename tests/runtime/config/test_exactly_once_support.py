"""Exactly-once source keys (KIP-618): the worker's ``exactly.once.source.support`` and a source connector's
``exactly.once.support``, ``transaction.boundary``, ``transaction.boundary.interval.ms`` and
``offsets.storage.topic`` are validated with Kafka Connect's validators and ``DistributedHerder`` checks. Only a
distributed worker may enable the support; a key that would be ignored on a worker without it is refused naming the
key (validate, create, REST), and so is a per-connector offsets topic on a standalone worker, where Kafka Connect
ignores it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from headwater.harness import MonitorableSourceConnector
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config import exactly_once_support
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.runtime.distributed import DISTRIBUTED_CONFIG
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, validate_connector_config
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import (
    ConfigError,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceTaskContext,
)

SOURCE = {"connector.class": "monitorable-source", "name": "src", "topic": "t"}
ENABLED = {**DEFAULT_WORKER_CONFIG, exactly_once_support.WORKER_SUPPORT: "enabled"}
"""A distributed worker with the support enabled."""
IGNORED = "takes effect only on a worker with exactly.once.source.support=enabled, and this worker has it disabled"


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
    assert SourceTaskContext.transaction_context is None, "only a task of connector-defined transactions has one"


# ---- the worker key -------------------------------------------------------------------------------------------------

DISTRIBUTED = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}


@pytest.mark.parametrize(("definition", "base"), [(STANDALONE_CONFIG, {}), (DISTRIBUTED_CONFIG, DISTRIBUTED)])
def test_the_worker_key_defaults_to_disabled_and_takes_kafkas_values(definition: Any, base: dict[str, str]) -> None:
    assert definition.parse(base)[exactly_once_support.WORKER_SUPPORT] == "disabled"
    for value in ("DISABLED", "preparing", "enabled"):
        assert (
            definition.parse({**base, exactly_once_support.WORKER_SUPPORT: value})[exactly_once_support.WORKER_SUPPORT]
            == value
        )
    with pytest.raises(ConfigError, match="String must be one of: disabled, preparing, enabled"):
        definition.parse({**base, exactly_once_support.WORKER_SUPPORT: "on"})


@pytest.mark.parametrize("value", ["enabled", "preparing"])
def test_only_a_distributed_worker_may_have_the_support(value: str, tmp_path: Any) -> None:
    config = {exactly_once_support.WORKER_SUPPORT: value}
    with pytest.raises(ConfigError, match=r"needs a distributed worker .*Kafka Connect offers it in distributed mode"):
        Worker(config, MemoryTransport(), MemoryOffsetStore())
    assert Worker(config, MemoryTransport(), MemoryOffsetStore(), group_id="g").group_id == "g"
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        f"{exactly_once_support.WORKER_SUPPORT}={value}\noffset.storage.file.filename={tmp_path}/o\n"
    )
    with pytest.raises(PropertiesError, match=f"worker.properties.*{exactly_once_support.WORKER_SUPPORT}.*distributed"):
        StandaloneWorker.from_paths(worker_file, [])


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
        ({"transaction.boundary": "interval", "transaction.boundary.interval.ms": "100"}, None),
    ],
)
def test_a_key_a_worker_without_the_support_would_ignore_is_refused_there(
    props: dict[str, str], key: str | None
) -> None:
    connector = Answering(boundaries=ConnectorTransactionBoundaries.SUPPORTED)
    found = exactly_once_support.problems({**SOURCE, **props}, connector, DEFAULT_WORKER_CONFIG, {})
    for refused in [key] if key else list(props):
        assert found[refused][-1].startswith(f"{refused} {IGNORED}")
    assert exactly_once_support.problems({**SOURCE, **props}, connector, ENABLED, {}) == {}
    preparing = {**DEFAULT_WORKER_CONFIG, exactly_once_support.WORKER_SUPPORT: "preparing"}
    assert exactly_once_support.problems({**SOURCE, **props}, connector, preparing, {}) == {}


def test_an_interval_without_the_interval_boundary_is_refused() -> None:
    found = exactly_once_support.problems(
        {**SOURCE, "transaction.boundary.interval.ms": "100"}, Answering(), ENABLED, {}
    )
    assert found == {
        "transaction.boundary.interval.ms": [
            "transaction.boundary.interval.ms takes effect only with transaction.boundary=interval: set that, or "
            "remove it"
        ]
    }


OWN_TOPIC = {**SOURCE, "offsets.storage.topic": "mine"}
STANDALONE_REFUSAL = "offsets.storage.topic takes effect only on a distributed worker"


@pytest.mark.parametrize("worker", [DEFAULT_WORKER_CONFIG, ENABLED], ids=["disabled", "enabled"])
def test_a_per_connector_offsets_topic_is_refused_on_a_standalone_worker_and_taken_on_a_distributed_one(
    worker: dict[str, Any],
) -> None:
    found = exactly_once_support.problems(OWN_TOPIC, Answering(), worker, {})
    assert found["offsets.storage.topic"][0].startswith(STANDALONE_REFUSAL)
    assert exactly_once_support.problems(OWN_TOPIC, Answering(), worker, {}, distributed=True) == {}
    assert errors_by_key(validate_connector_config(OWN_TOPIC, worker, distributed=True)) == {}
    refused = errors_by_key(validate_connector_config(OWN_TOPIC, worker))
    assert refused["offsets.storage.topic"][0].startswith(STANDALONE_REFUSAL)


def test_a_per_connector_offsets_topic_on_the_producers_other_cluster_is_refused() -> None:
    worker = {**ENABLED, "bootstrap.servers": "a:9092,b:9092"}
    same = {**OWN_TOPIC, "producer.override.bootstrap.servers": "b:9092, a:9092"}
    assert exactly_once_support.problems(same, Answering(), worker, {}, distributed=True) == {}
    other = {**OWN_TOPIC, "producer.override.bootstrap.servers": "c:9092"}
    found = exactly_once_support.problems(other, Answering(), worker, {}, distributed=True)
    assert "Headwater keeps it on the worker's cluster only" in found["offsets.storage.topic"][0]


def test_a_standalone_worker_refuses_to_run_a_connector_with_its_own_offsets_topic() -> None:
    worker = Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    with pytest.raises(ConfigError, match=STANDALONE_REFUSAL):
        worker.validate(OWN_TOPIC)


def test_required_on_a_worker_without_the_support_gets_kafkas_message() -> None:
    errors = errors_by_key(validate_connector_config({**SOURCE, "exactly.once.support": "required"}))
    assert errors["exactly.once.support"][0] == "This worker does not have exactly-once source support enabled."


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
    found = exactly_once_support.problems(props, connector, ENABLED, {})
    assert len(found["exactly.once.support"]) == 1 and message in found["exactly.once.support"][0]
    assert connector.asked == [{**SOURCE, "exactly.once.support": "required", "tasks.max": "2"}], "raw strings"


def test_a_connector_that_can_deliver_exactly_once_is_accepted_where_the_support_is_enabled() -> None:
    props = {**SOURCE, "exactly.once.support": "required"}
    assert exactly_once_support.problems(props, Answering(ExactlyOnceSupport.SUPPORTED), ENABLED, {}) == {}


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
        found = exactly_once_support.problems(props, Answering(boundaries=answer), worker, {})
        assert message in found["transaction.boundary"][0]


def test_a_key_with_a_validator_error_is_not_asked_about_again() -> None:
    connector = Answering()
    props = {**SOURCE, "exactly.once.support": "required", "offsets.storage.topic": "x"}
    errors = {"exactly.once.support": ["bad"], "offsets.storage.topic": ["bad"]}
    assert exactly_once_support.problems(props, connector, ENABLED, errors) == {}
    assert connector.asked == []


def test_the_keys_belong_to_source_connectors_only() -> None:
    infos = validate_connector_config(
        {"connector.class": "monitorable-sink", "topics": "t", "exactly.once.support": "requested"}
    )
    message = "exactly.once.support is a source connector configuration: a sink connector would ignore it"
    assert errors_by_key(infos)["exactly.once.support"][0].startswith(message)


def test_the_source_definition_has_kafkas_defaults() -> None:
    parsed = exactly_once_support.SOURCE_CONFIG.parse({})
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


def test_create_refuses_a_key_this_worker_would_ignore_and_creates_nothing(herder: StandaloneHerder) -> None:
    with pytest.raises(InvalidConfigError, match=f"transaction.boundary {IGNORED}"):
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
            assert rest.get("/connectors").json() == []
            validated = rest.put("/connector-plugins/monitorable-source/config/validate", json=asked).json()
            assert validated["error_count"] == 2, "the worker's support and the connector's answer"
            assert list(errors_by_key(validated)) == ["exactly.once.support"]
    finally:
        server.stop()
