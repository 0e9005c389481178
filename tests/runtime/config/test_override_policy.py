"""Which client settings a connector config may set (issue 21): the worker's
``connector.client.config.override.policy`` (KIP-458) and, whatever the policy, no setting that loads code, runs a
command or reads local files unless ``connector.client.config.allowed.unsafe.keys`` names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.override_policy import OVERRIDE_POLICY, client_refusals, policy_name
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.config.unsafe_settings import ALLOWED_UNSAFE, UNSAFE_SETTINGS
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.herder.validation import check_connector_config, validate_connector_config
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import ConfigError

SOURCE = {"name": "c", "connector.class": "monitorable-source", "topic": "t"}
JAVA = "org.apache.kafka.connect.connector.policy."


def worker_config(**props: Any) -> dict[str, Any]:
    return WORKER_CONFIG.parse({key.replace("_", "."): value for key, value in props.items()})


def refused(props: dict[str, Any], **worker: Any) -> dict[str, list[str]]:
    return client_refusals({**SOURCE, **props}, worker_config(**worker))


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("None", "None"),
        ("principal", "Principal"),
        ("All", "All"),
        (JAVA + "NoneConnectorClientConfigOverridePolicy", "None"),
        (JAVA + "PrincipalConnectorClientConfigOverridePolicy", "Principal"),
        ("AllConnectorClientConfigOverridePolicy", "All"),
    ],
)
def test_the_policy_takes_its_name_or_kafka_connects_class_name(value: str, name: str) -> None:
    assert policy_name(worker_config(**{OVERRIDE_POLICY: value})[OVERRIDE_POLICY]) == name


def test_the_default_policy_is_all_as_in_kafka_connect() -> None:
    assert worker_config()[OVERRIDE_POLICY] == "All"
    assert refused({"producer.override.acks": "0", "producer.override.sasl.username": "u"}) == {}


def test_a_bad_policy_is_refused_when_the_worker_config_is_parsed() -> None:
    with pytest.raises(ConfigError, match=f"configuration {OVERRIDE_POLICY}: Expected one of None, Principal, All"):
        worker_config(**{OVERRIDE_POLICY: "Some"})


def test_none_refuses_every_override() -> None:
    found = refused(
        {"producer.override.acks": "0", "consumer.override.sasl.jaas.config": "x", "admin.override.client.id": "a"},
        **{OVERRIDE_POLICY: "None"},
    )
    assert sorted(found) == ["admin.override.client.id", "consumer.override.sasl.jaas.config", "producer.override.acks"]
    assert found["producer.override.acks"] == [
        "producer.override.acks: The 'None' policy does not allow 'acks' to be overridden in the connector "
        f"configuration; the worker's {OVERRIDE_POLICY} allows no override (remove the key, or set the worker's "
        "policy to All)"
    ]


def test_principal_allows_only_the_clients_identity() -> None:
    identity = {
        "producer.override.sasl.jaas.config": "x",
        "producer.override.sasl.mechanism": "PLAIN",
        "producer.override.security.protocol": "SASL_SSL",
        "consumer.override.sasl.username": "u",
        "consumer.override.sasl.password": "p",
    }
    assert refused(identity, **{OVERRIDE_POLICY: "Principal"}) == {}
    found = refused({**identity, "producer.override.acks": "0"}, **{OVERRIDE_POLICY: "Principal"})
    assert list(found) == ["producer.override.acks"]
    assert "The 'Principal' policy does not allow 'acks'" in found["producer.override.acks"][0]


@pytest.mark.parametrize(
    ("key", "setting"),
    [
        ("producer.override.plugin.library.paths", "plugin.library.paths"),
        ("consumer.override.ssl.engine.location", "ssl.engine.location"),
        ("admin.override.sasl.kerberos.kinit.cmd", "sasl.kerberos.kinit.cmd"),
        ("source.ssl.key.location", "ssl.key.location"),
        ("connector.consumer.plugin.library.paths", "plugin.library.paths"),
        ("any.client.prefix.sasl.kerberos.keytab", "sasl.kerberos.keytab"),
        ("plugin.library.paths", "plugin.library.paths"),
        ("producer.override.PLUGIN.LIBRARY.PATHS", "plugin.library.paths"),
    ],
)
def test_a_setting_that_loads_code_or_reads_files_is_refused_whatever_the_policy(key: str, setting: str) -> None:
    found = refused({key: "/tmp/evil.so"})
    assert found == {
        key: [
            f"{key}: the client setting {setting} {UNSAFE_SETTINGS[setting]}, so a connector config may not set it; "
            f"list {setting} in the worker's {ALLOWED_UNSAFE} to allow it"
        ]
    }


def test_every_unsafe_setting_is_refused_under_any_prefix() -> None:
    found = refused({f"producer.override.{setting}": "x" for setting in UNSAFE_SETTINGS})
    assert sorted(found) == sorted(f"producer.override.{setting}" for setting in UNSAFE_SETTINGS)


def test_the_worker_allows_an_unsafe_setting_by_name() -> None:
    props = {"producer.override.ssl.ca.location": "/etc/ca.pem", "source.ssl.ca.location": "/etc/ca.pem"}
    assert refused(props, **{ALLOWED_UNSAFE: "ssl.ca.location"}) == {}
    assert list(refused({**props, "producer.override.ssl.key.location": "k"}, **{ALLOWED_UNSAFE: "ssl.ca.location"}))


def test_a_blank_unsafe_setting_asks_for_nothing() -> None:
    assert refused({"producer.override.plugin.library.paths": " "}) == {}


def test_an_oidc_token_endpoint_must_be_http_or_https() -> None:
    key = "producer.override.sasl.oauthbearer.token.endpoint.url"
    assert refused({key: "https://idp.example/token"}) == {}
    assert refused({key: "${env:OIDC_URL}"}) == {}  # checked once resolved, when the worker starts it
    assert "reads a local file" in refused({key: "file:///etc/shadow"})[key][0]


def test_the_kerberos_principal_is_refused_it_goes_into_a_shell_command() -> None:
    key = "producer.override.sasl.kerberos.principal"
    assert "kinit shell command" in refused({key: "x; touch /tmp/pwned"})[key][0]


def test_an_allowance_naming_no_unsafe_setting_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=f"{ALLOWED_UNSAFE}: ssl.ca.locaton: not an unsafe client setting"):
        worker_config(**{ALLOWED_UNSAFE: "ssl.ca.locaton"})


def test_create_refuses_and_validate_reports_on_the_key_whatever_unknown_keys_says() -> None:
    props = {**SOURCE, "producer.override.plugin.library.paths": "/tmp/evil.so", "producer.override.acks": "0"}
    worker = worker_config(**{OVERRIDE_POLICY: "None", "connector.unknown.keys": "warn"})
    with pytest.raises(InvalidConfigError) as refusal:
        check_connector_config(props, worker)
    assert "producer.override.plugin.library.paths" in str(refusal.value)
    assert "The 'None' policy does not allow 'acks'" in str(refusal.value)
    infos = validate_connector_config(props, worker)
    errors = {info["value"]["name"]: info["value"]["errors"] for info in infos["configs"]}
    assert len(errors["producer.override.plugin.library.paths"]) == 2  # the policy's and the unsafe setting's
    assert errors["producer.override.acks"] == refused(props, **{OVERRIDE_POLICY: "None"})["producer.override.acks"]


def test_the_worker_refuses_a_stored_config_it_would_not_accept_now() -> None:
    """A config stored before the rule (a config topic, a connector file) never reaches a client."""
    worker = Worker({OVERRIDE_POLICY: "None"}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    props = {**SOURCE, "producer.override.plugin.library.paths": "/tmp/evil.so"}
    with pytest.raises(ConfigError, match=r"producer\.override\.plugin\.library\.paths: the client setting"):
        worker.start_connector("c", props)
    assert "c" not in worker.connectors


def test_a_standalone_connector_file_is_held_to_the_same_rules(tmp_path: Path) -> None:
    """The worker file may set an unsafe setting for its own clients; a connector file may not, unless allowed."""
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:1\nproducer.ssl.ca.location=/etc/ca.pem\n", encoding="utf-8")
    connector = tmp_path / "c.properties"
    connector.write_text(
        "name=src\nconnector.class=monitorable-source\ntopic=t\nproducer.override.ssl.engine.location=/tmp/e.so\n",
        encoding="utf-8",
    )
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker, [connector])
    assert str(raised.value).startswith(
        f"{connector}:4: producer.override.ssl.engine.location: producer.override.ssl.engine.location: the client "
        "setting ssl.engine.location loads a shared library"
    )


def test_a_bad_policy_in_a_worker_file_stops_the_worker_naming_the_key(tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text(f"bootstrap.servers=127.0.0.1:1\n{OVERRIDE_POLICY}=Everything\n", encoding="utf-8")
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker, [])
    assert str(raised.value).startswith(f"{worker}:2: {OVERRIDE_POLICY}: invalid value 'Everything': Expected one of")
