"""TLS on the REST listener: an https listener with a test CA's certificate, plain HTTP refused, mutual TLS, and
the start-up errors naming the key of a missing or bad file."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from headwater.runtime.commands import standalone
from headwater.runtime.commands.distributed import main as distributed_main
from headwater.runtime.config.properties import format_properties
from headwater.sdk.errors import ConfigError
from support.secure_server import Certificates, rest_server, serving
from support.unknown_keys import UnknownKeyWarnings


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    return Certificates(tmp_path)


def test_an_https_listener_serves_the_api_to_clients_trusting_its_ca(certificates: Certificates) -> None:
    with serving(**certificates.https_props()) as server:
        assert server.url.startswith("https://127.0.0.1:")
        response = httpx.get(f"{server.url}/connectors", verify=certificates.client_context())
        assert response.status_code == 200
        assert response.json() == []
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(f"{server.url}/connectors")  # the system's CAs do not know the test CA


def test_a_pkcs12_keystore_serves_as_the_certificate_and_key(certificates: Certificates) -> None:
    props = certificates.https_props(listeners_https_ssl_keystore_password="changeit")
    del props["listeners.https.ssl.certificate.location"], props["listeners.https.ssl.key.location"]
    props["listeners.https.ssl.keystore.location"] = certificates.keystore("changeit")
    with serving(**props) as server:
        assert httpx.get(f"{server.url}/connectors", verify=certificates.client_context()).json() == []
    with pytest.raises(ConfigError, match=r"wrong listeners\.https\.ssl\.keystore\.password") as error:
        rest_server(**{**props, "listeners.https.ssl.keystore.password": "wrong"})
    assert error.value.key == "listeners.https.ssl.keystore.location"


def test_plain_http_to_an_https_listener_is_refused(certificates: Certificates) -> None:
    with serving(**certificates.https_props()) as server:
        plain = server.url.replace("https://", "http://")
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{plain}/connectors")
        assert httpx.get(f"{server.url}/", verify=certificates.client_context()).status_code == 200


def test_required_client_certificates_refuse_clients_without_one(certificates: Certificates) -> None:
    props = certificates.https_props(
        listeners_https_ssl_client_auth="required", listeners_https_ssl_truststore_location=certificates.client_cas
    )
    with serving(**props) as server:
        url = f"{server.url}/connectors"
        assert httpx.get(url, verify=certificates.client_context(certificates.client_ca)).status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(url, verify=certificates.client_context())
        with pytest.raises(httpx.TransportError):  # a certificate from a CA the listener does not trust
            httpx.get(url, verify=certificates.client_context(certificates.server_ca))


def test_required_client_certificates_count_as_authentication(
    certificates: Certificates, caplog: pytest.LogCaptureFixture
) -> None:
    props = certificates.https_props(
        listeners_https_ssl_client_auth="required", listeners_https_ssl_truststore_location=certificates.client_cas
    )
    server = rest_server(**props)
    assert server.security.authenticates
    with caplog.at_level(logging.WARNING):
        server.security.warn_if_open("0.0.0.0")
    assert caplog.records == []
    requested = rest_server(
        **{**props, "listeners.https.ssl.client.auth": "requested"}  # a certificate is optional: no authentication
    )
    assert not requested.security.authenticates


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"listeners.https.ssl.certificate.location": None}, "certificate.location", "needs a certificate"),
        (
            {"listeners.https.ssl.certificate.location": None, "listeners.https.ssl.keystore.location": "CA"},
            "keystore.location",
            "Not a PKCS12 keystore",
        ),
        ({"listeners.https.ssl.certificate.location": "/nonexistent.pem"}, "certificate.location", "Cannot read"),
        ({"listeners.https.ssl.key.location": "/nonexistent.key"}, "key.location", "Cannot read"),
        ({"listeners.https.ssl.key.location": "CA"}, "key.location", "Not a PEM"),
        ({"listeners.https.ssl.client.auth": "required"}, "truststore.location", "need CAs"),
        (
            {"listeners.https.ssl.client.auth": "requested", "listeners.https.ssl.truststore.location": "/none.pem"},
            "truststore.location",
            "Cannot read",
        ),
        ({"listeners.https.ssl.keystore.location": "/etc/connect.jks"}, "keystore.location", "Give a keystore or"),
        ({"listeners.https.ssl.client.auth": "sometimes"}, "client.auth", "none"),
    ],
)
def test_bad_tls_settings_fail_at_start_up_naming_the_key(
    certificates: Certificates, change: dict[str, str | None], key: str, words: str
) -> None:
    props = certificates.https_props()
    for name, value in change.items():
        if value is None:
            del props[name]
        else:
            props[name] = certificates.client_cas if value == "CA" else value
    with pytest.raises(ConfigError, match=words) as error:
        rest_server(**props)
    assert error.value.key == f"listeners.https.ssl.{key}"


@pytest.mark.parametrize("command", [standalone.main, distributed_main], ids=["standalone", "distributed"])
def test_worker_commands_refuse_a_bad_certificate_before_waiting_for_kafka(
    command: Callable[..., int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unknown_key_warnings: UnknownKeyWarnings,
) -> None:
    worker = tmp_path / "worker.properties"
    props = {
        "bootstrap.servers": "127.0.0.1:1",  # nothing listens there: the command must not get that far
        "group.id": "g",
        "config.storage.topic": "c",
        "offset.storage.topic": "o",
        "status.storage.topic": "s",
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.certificate.location": str(tmp_path / "missing.pem"),
    }
    worker.write_text(format_properties(props), encoding="utf-8")
    code = command(str(worker), []) if command is standalone.main else command(str(worker))
    assert code == 2
    error = capsys.readouterr().err
    assert f"{worker}:7: listeners.https.ssl.certificate.location" in error
    assert "Cannot read the file" in error
    standalone_ignores = ["group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"]
    assert unknown_key_warnings.take() == (standalone_ignores if command is standalone.main else [])


def test_tls_settings_on_a_plain_http_listener_are_refused_not_ignored() -> None:
    from headwater.runtime.config.worker import WORKER_CONFIG
    from headwater.runtime.rest.security import RestSecurity

    config = WORKER_CONFIG.parse(
        {"listeners": "http://127.0.0.1:0", "listeners.https.ssl.client.auth": "required", "bootstrap.servers": "x:1"}
    )
    with pytest.raises(ConfigError, match=r"listeners.https.ssl.client.auth.*not https://"):
        RestSecurity.from_config(config)
