"""No connector key is ignored in silence (issue 20): a typo is warned about at create (refused with
``connector.unknown.keys=error``) and reported by validate; a Kafka Connect key Headwater does not implement yet is
refused at create and reported by validate; over the herder, REST (in-memory transport) and connector files."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.known_keys import refused_keys
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, unknown_connector_keys, validate_connector_config
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from support.unknown_keys import UnknownKeyWarnings

SOURCE = {"connector.class": "monitorable-source", "topic": "t"}
SINK = {"connector.class": "monitorable-sink", "topics": "t"}
TYPO = {"erors.tolerance": "all"}
TRANSFORMS = {"transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.InsertField$Value"}


def problems(props: dict[str, Any], sink: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """The refused and the unknown keys of a config of the monitorable source (or sink)."""
    connector = MonitorableSinkConnector() if sink else MonitorableSourceConnector()
    return refused_keys(props, "sink" if sink else "source"), unknown_connector_keys(
        props, connector, DEFAULT_WORKER_CONFIG
    )


def errors_by_key(infos: dict[str, Any]) -> dict[str, list[str]]:
    return {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"] if info["value"]["errors"]}


# ---- the rules -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "sink"),
    [
        ("errors.deadletterqueue.topic.name", False),
        ("config.action.reload", True),
        ("tasks.max.enforce", False),
        ("connector.plugin.version", True),
        ("value.converter.plugin.version", False),
    ],
)
def test_kafka_connect_keys_not_implemented_are_refused_saying_so(key: str, sink: bool) -> None:
    refused, unknown = problems({key: "restart" if key == "config.action.reload" else "x"}, sink)
    assert list(refused) == [key]
    assert "yet" in refused[key] or "dead-letter" in refused[key]
    assert unknown == {}


@pytest.mark.parametrize(
    "props",
    [{"transforms": ""}, {"transforms": " "}, {"predicates": ""}, {"tasks.max.enforce": "true"}],
)
def test_a_blank_or_harmless_value_is_accepted_without_a_word(props: dict[str, str]) -> None:
    assert problems(props) == ({}, {})


def test_a_typo_is_unknown_with_the_key_it_is_close_to() -> None:
    refused, unknown = problems(TYPO)
    assert refused == {}
    assert unknown["erors.tolerance"].endswith("did you mean errors.tolerance?")


def test_keys_that_apply_to_the_other_kind_only_are_unknown() -> None:
    assert list(problems({"topics.regex": "t.*", "heartbeat.interval.ms": "5"}, sink=True)[1]) == [
        "heartbeat.interval.ms"
    ]
    assert problems({"topics.regex": "t.*"})[1].keys() == {"topics.regex"}
    assert problems({"errors.deadletterqueue.topic.name": "dlq"}, sink=True) == ({}, {})


def test_a_client_override_is_known_where_a_client_of_the_tasks_takes_it() -> None:
    assert problems({"producer.override.acks": "all"}) == ({}, {})
    assert problems({"consumer.override.fetch.min.bytes": "1"}, sink=True) == ({}, {})
    unknown = problems({"consumer.override.fetch.min.bytes": "1", "admin.override.x": "1"})[1]
    assert unknown.keys() == {"consumer.override.fetch.min.bytes", "admin.override.x"}
    assert "reaches no client" in unknown["admin.override.x"]
    assert problems({"producer.override.acks": "all"}, sink=True) == ({}, {}), "a sink's dead-letter producer"
    assert "consumer.override.fetch.min.bytes" in problems({"consumer.override.fetch.min.bytes": "1"})[1]


def test_converter_settings_are_checked_against_the_chosen_converter() -> None:
    assert problems({"value.converter.schemas.enable": "false"}) == ({}, {})
    unknown = problems({"value.converter.schemas.enabled": "false"})[1]
    assert unknown["value.converter.schemas.enabled"].endswith("did you mean value.converter.schemas.enable?")
    as_string = problems({"value.converter": "string", "value.converter.schemas.enable": "false"})[1]
    assert "StringConverter" in as_string["value.converter.schemas.enable"]
    assert problems({"key.converter": "string", "key.converter.converter.encoding": "latin-1"}) == ({}, {})
    # a converter without a CONFIG may take any setting
    assert problems({"value.converter": f"{__name__}:OpaqueConverter", "value.converter.anything": "1"}) == ({}, {})


class OpaqueConverter:
    def configure(self, config: Any, is_key: bool) -> None: ...

    def from_connect(self, topic: str, schema: Any, value: Any) -> bytes | None:
        return None

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return None


def test_a_connector_that_declares_no_keys_may_read_any_but_a_typo_of_a_runtime_key_is_still_reported() -> None:
    assert MonitorableSinkConnector().config_def().keys == {}
    unknown = problems({"table": "t", "batch": "5", **TYPO}, sink=True)[1]
    assert list(unknown) == ["erors.tolerance"]


def test_a_worker_key_in_a_connector_config_says_where_it_belongs() -> None:
    unknown = problems({"offset.flush.interval.ms": "10"})[1]
    assert "worker configuration" in unknown["offset.flush.interval.ms"]


# ---- the herder and REST, in memory ----------------------------------------------------------------------------


@pytest.fixture
def herder(request: pytest.FixtureRequest) -> Iterator[StandaloneHerder]:
    """A standalone herder over the in-memory transport; ``@pytest.mark.parametrize("herder", [{...}],
    indirect=True)`` gives its worker config."""
    worker_config = getattr(request, "param", {})
    herder = StandaloneHerder(Worker(worker_config, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    yield herder
    herder.stop()


@pytest.fixture
def rest(herder: StandaloneHerder) -> Iterator[httpx.Client]:
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()


def test_a_typo_is_created_with_a_warning_and_reported_by_validate(
    herder: StandaloneHerder, caplog: pytest.LogCaptureFixture, unknown_key_warnings: UnknownKeyWarnings
) -> None:
    with caplog.at_level(logging.WARNING, "headwater"):
        assert herder.put_connector_config("src", {**SOURCE, **TYPO})
    assert unknown_key_warnings.take() == ["erors.tolerance"]
    assert "connector src: erors.tolerance is not a configuration" in caplog.text
    assert "did you mean errors.tolerance?" in caplog.text
    infos = validate_connector_config({**SOURCE, **TYPO, "name": "src"}, herder.worker.config)
    assert list(errors_by_key(infos)) == ["erors.tolerance"]
    assert infos["error_count"] == 1
    herder.patch_connector_config("src", {"erors.log.enable": "true"})
    assert unknown_key_warnings.take() == ["erors.tolerance", "erors.log.enable"]


def test_a_transform_without_its_type_is_refused_at_create_and_nothing_is_created(herder: StandaloneHerder) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        herder.put_connector_config("src", {**SOURCE, "transforms": "x"})
    assert set(raised.value.errors) == {"transforms.x.type"}
    assert "Missing required configuration" in str(raised.value)
    assert herder.connectors() == []
    herder.put_connector_config(
        "src", {**SOURCE, **TRANSFORMS, "transforms.x.static.field": "f", "transforms.x.static.value": "v"}
    )
    assert herder.connectors() == ["src"]


@pytest.mark.parametrize("herder", [{"connector.unknown.keys": "error"}], indirect=True)
def test_an_operator_can_make_unknown_keys_an_error(herder: StandaloneHerder) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        herder.put_connector_config("snk", {**SINK, **TYPO, "erors.log.enable": "true"})
    assert set(raised.value.errors) == {"erors.tolerance", "erors.log.enable"}
    assert herder.connectors() == []
    herder.put_connector_config("snk", SINK)
    with pytest.raises(InvalidConfigError):
        herder.patch_connector_config("snk", TYPO)
    assert "erors.tolerance" not in herder.connector_config("snk")


def test_over_rest_a_typo_is_created_and_validate_reports_it(
    rest: httpx.Client, unknown_key_warnings: UnknownKeyWarnings
) -> None:
    created = rest.post("/connectors", json={"name": "src", "config": {**SOURCE, **TYPO}})
    assert created.status_code == 201, created.text
    assert unknown_key_warnings.take() == ["erors.tolerance"]
    validated = rest.put("/connector-plugins/monitorable-source/config/validate", json={**SOURCE, **TYPO})
    assert validated.status_code == 200
    assert errors_by_key(validated.json())["erors.tolerance"][0].endswith("did you mean errors.tolerance?")


def test_over_rest_a_transform_without_its_type_is_refused_and_reported_by_validate(rest: httpx.Client) -> None:
    refused = rest.put("/connectors/src/config", json={**SOURCE, "name": "src", "transforms": "x"})
    assert refused.status_code == 400
    assert "transforms.x.type: Missing required configuration" in refused.json()["message"]
    assert rest.get("/connectors").json() == []
    validated = rest.put(
        "/connector-plugins/monitorable-source/config/validate", json={**SOURCE, "name": "src", "transforms": "x"}
    )
    infos = validated.json()
    assert (infos["error_count"], list(errors_by_key(infos))) == (1, ["transforms.x.type"])
    assert rest.post("/connectors", json={"name": "src", "config": {**SOURCE, "transforms": ""}}).status_code == 201


@pytest.mark.parametrize("herder", [{"connector.unknown.keys": "error"}], indirect=True)
def test_over_rest_a_strict_worker_refuses_a_typo_naming_it(rest: httpx.Client) -> None:
    refused = rest.post("/connectors", json={"name": "src", "config": {**SOURCE, **TYPO}})
    assert refused.status_code == 400
    assert "erors.tolerance is not a configuration" in refused.json()["message"]


# ---- a standalone worker's connector files ------------------------------------------------------------------------

WORKER = "bootstrap.servers=127.0.0.1:1\n"
SOURCE_FILE = "name=src\nconnector.class=monitorable-source\ntopic=t\n"


def files(tmp_path: Path, worker: str, connector: str) -> tuple[Path, Path]:
    (tmp_path / "worker.properties").write_text(worker, encoding="utf-8")
    (tmp_path / "c.properties").write_text(connector, encoding="utf-8")
    return tmp_path / "worker.properties", tmp_path / "c.properties"


def test_a_typo_in_a_connector_file_is_warned_about_naming_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, unknown_key_warnings: UnknownKeyWarnings
) -> None:
    worker, connector = files(tmp_path, WORKER, SOURCE_FILE + "erors.tolerance=all\n")
    with caplog.at_level(logging.WARNING, "headwater"):
        StandaloneWorker.from_paths(worker, [connector])
    assert unknown_key_warnings.take() == ["erors.tolerance"]
    assert f"{connector}:4: erors.tolerance: erors.tolerance is not a configuration" in caplog.text


@pytest.mark.parametrize(
    ("worker", "extra", "message"),
    [
        (WORKER, "transforms=x\n", "c.properties: transforms.x.type: "),
        (WORKER + "connector.unknown.keys=error\n", "erors.tolerance=all\n", "c.properties:4: erors.tolerance: "),
    ],
)
def test_a_connector_file_with_a_refused_key_is_a_bad_file(
    tmp_path: Path, worker: str, extra: str, message: str
) -> None:
    worker_path, connector = files(tmp_path, worker, SOURCE_FILE + extra)
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker_path, [connector])
    assert str(raised.value).startswith(f"{tmp_path}/{message}")


def test_a_typo_in_a_transform_setting_or_an_unlisted_alias_is_unknown() -> None:
    props = {
        **TRANSFORMS,
        "transforms.x.static.feild": "f",
        "transforms.y.type": "org.apache.kafka.connect.transforms.Filter",
    }
    refused, unknown = problems(props)
    assert refused == {}
    assert unknown["transforms.x.static.feild"].endswith("did you mean transforms.x.static.field?")
    assert "transforms.y.type is not a configuration" in unknown["transforms.y.type"], "y is not in transforms"
