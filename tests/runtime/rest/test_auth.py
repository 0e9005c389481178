"""Authentication on the REST API: every route of the application refuses a request without the right
credentials with 401 and answers one with them as an open server does; the ways to turn it on."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from starlette.routing import Route

from headwater.runtime.config.listeners import BASIC_AUTH_EXTENSION
from headwater.runtime.rest import RestServer
from headwater.runtime.rest.auth import JAAS_ENV
from headwater.runtime.rest.client_certificate import ClientCertificate
from headwater.runtime.rest.guard import UNAUTHENTICATED_PATHS
from headwater.sdk.errors import ConfigError
from support.process import WorkerProcess
from support.secure_server import Certificates, rest_server, serving

CREDENTIALS = "# Kafka Connect's PropertyFileLoginModule format\nadmin: s3cret\nops=p\\u00e4ss word\n"


@pytest.fixture
def credentials(tmp_path: Path) -> str:
    path = tmp_path / "credentials.properties"
    path.write_text(CREDENTIALS, encoding="utf-8")
    return str(path)


def requests_of_every_route(server: RestServer) -> Iterator[tuple[str, str]]:
    """(method, path) for every method of every route the application has, path parameters filled in: the API's
    routes from its OpenAPI spec, and the application's own (the spec, the docs pages)."""
    found = {(method.upper(), path) for path, item in server.app.openapi()["paths"].items() for method in item}
    found |= {
        (method, route.path)
        for route in server.app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
    }
    for method, path in sorted(found):
        yield method, re.sub(r"\{[^}]*\}", "0", path)


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def send(
    to: RestServer | httpx.Client, method: str, path: str, headers: Mapping[str, str] | None = None
) -> httpx.Response:
    body: Any = {} if method in ("POST", "PUT", "PATCH") else None
    if isinstance(to, RestServer):
        return httpx.request(method, to.url + path, json=body, headers=headers, timeout=10)
    return to.request(method, path, json=body, headers=headers)


def test_every_route_needs_the_right_credentials(credentials: str) -> None:
    with ExitStack() as stack:
        open_server = stack.enter_context(serving())
        server = stack.enter_context(serving(rest_auth_basic_credentials_file=credentials))
        routes = list(requests_of_every_route(server))
        open_client = stack.enter_context(httpx.Client(base_url=open_server.url, timeout=10))
        client = stack.enter_context(httpx.Client(base_url=server.url, timeout=10))
        assert ("POST", "/connectors") in routes and ("GET", "/openapi.json") in routes
        assert ("GET", "/health") in routes
        for method, path in routes:
            if path in UNAUTHENTICATED_PATHS:  # the health check (KIP-1017): answered to anyone
                assert send(client, method, path).status_code == send(open_client, method, path).status_code != 401
                continue
            for headers in (None, basic("admin", "wrong"), basic("nobody", "s3cret"), {"Authorization": "Basic ?"}):
                refused = send(client, method, path, headers)
                assert refused.status_code == 401, (method, path, headers, refused.text)
                assert refused.headers["www-authenticate"].startswith('Basic realm="'), (method, path)
            usual = send(open_client, method, path).status_code
            assert usual != 401
            assert send(client, method, path, basic("admin", "s3cret")).status_code == usual, (method, path)
            assert send(client, method, path, basic("ops", "päss word")).status_code == usual, (method, path)


def test_the_basic_auth_extension_reads_the_credentials_file_its_jaas_file_names(
    credentials: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(
        "// Kafka Connect's JAAS file\nKafkaConnect {\n"
        "  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
        f'  file="{credentials}";\n}};\n',
        encoding="utf-8",
    )
    props = {"rest.extension.classes": BASIC_AUTH_EXTENSION, "rest.auth.jaas.config.location": str(jaas)}
    with serving(**props) as server:
        assert send(server, "GET", "/connectors").status_code == 401
        assert send(server, "GET", "/connectors", basic("admin", "s3cret")).status_code == 200
    monkeypatch.setenv(JAAS_ENV, str(jaas))
    assert rest_server(rest_extension_classes=BASIC_AUTH_EXTENSION).security.authenticates
    monkeypatch.delenv(JAAS_ENV)
    with pytest.raises(ConfigError, match=JAAS_ENV) as error:
        rest_server(rest_extension_classes=BASIC_AUTH_EXTENSION)
    assert error.value.key == "rest.auth.jaas.config.location"
    jaas.write_text("KafkaServer { x required; };", encoding="utf-8")
    with pytest.raises(ConfigError, match="KafkaConnect"):
        rest_server(**props)


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        ({"rest.auth.basic.credentials.file": "/nonexistent"}, "rest.auth.basic.credentials.file", "Cannot read"),
        ({"rest.extension.classes": "com.example.Other"}, "rest.extension.classes", "Only"),
        ({"rest.authenticator": "no-such"}, "rest.authenticator", "No such entry point"),
    ],
)
def test_bad_authentication_settings_fail_at_start_up_naming_the_key(
    props: dict[str, str], key: str, words: str
) -> None:
    with pytest.raises(ConfigError, match=words) as error:
        rest_server(**props)
    assert error.value.key == key


class TokenAuthenticator:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config

    def authenticate(self, method: str, path: str, headers: Mapping[str, str]) -> str | None:
        return "robot" if headers.get("authorization") == "Bearer t0ken" else None

    def challenge(self) -> str:
        return "Bearer"


class FakeEntryPoint:
    name = "token"

    def load(self) -> type[TokenAuthenticator]:
        return TokenAuthenticator


def test_an_installed_authenticator_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("headwater.runtime.rest.auth.installed_entry_points", lambda group: [FakeEntryPoint()])
    with serving(rest_authenticator="token") as server:
        refused = send(server, "GET", "/connectors")
        assert (refused.status_code, refused.headers["www-authenticate"]) == (401, "Bearer")
        assert send(server, "GET", "/connectors", {"Authorization": "Bearer t0ken"}).status_code == 200


class CertificateAuthenticator:
    """Authorises by the verified client certificate: its common name is the principal, if it is on the list."""

    seen: ClassVar[list[ClientCertificate | None]] = []

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.allowed = {"alice"}

    def authenticate(
        self, method: str, path: str, headers: Mapping[str, str], client_certificate: ClientCertificate | None = None
    ) -> str | None:
        self.seen.append(client_certificate)
        name = client_certificate.common_name if client_certificate is not None else None
        return name if name in self.allowed else None

    def challenge(self) -> str:
        return "Certificate"


class CertificateEntryPoint:
    name = "cert"

    def load(self) -> type[CertificateAuthenticator]:
        return CertificateAuthenticator


def test_an_authenticator_can_authorise_by_the_verified_client_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Over mutual TLS an authenticator taking ``client_certificate`` is given the certificate the listener verified
    (subject, common name, SANs), None for a client without one; a header cannot pose as one."""
    monkeypatch.setattr("headwater.runtime.rest.auth.installed_entry_points", lambda group: [CertificateEntryPoint()])
    monkeypatch.setattr(CertificateAuthenticator, "seen", [])
    certificates = Certificates(tmp_path)
    props = certificates.https_props(
        rest_authenticator="cert",
        listeners_https_ssl_client_auth="requested",
        listeners_https_ssl_truststore_location=certificates.client_cas,
    )
    with serving(**props) as server:
        url = f"{server.url}/connectors"
        alice = certificates.client_context(certificates.client_ca, name="alice")
        assert httpx.get(url, verify=alice).status_code == 200
        (certificate,) = CertificateAuthenticator.seen
        assert certificate is not None and certificate.common_name == "alice"
        assert certificate.subject.startswith("CN=alice,") and "O=trustme" in certificate.subject
        assert certificate.sans == (("email", "alice@example.com"),)
        assert certificate.pem.startswith("-----BEGIN CERTIFICATE-----")
        bob = certificates.client_context(certificates.client_ca, name="bob")
        assert httpx.get(url, verify=bob).status_code == 401
        none = httpx.get(url, verify=certificates.client_context(), headers={"ssl-client-subject-dn": "CN=alice"})
        assert (none.status_code, none.headers["www-authenticate"]) == (401, "Certificate")
        assert CertificateAuthenticator.seen[1].common_name == "bob" and CertificateAuthenticator.seen[2] is None


@pytest.mark.kafka
def test_the_standalone_command_serves_https_with_basic_auth(
    kafka_bootstrap: str, tmp_path: Path, credentials: str
) -> None:
    certificates = Certificates(tmp_path)
    props = {
        "bootstrap.servers": kafka_bootstrap,
        **certificates.https_props(rest_auth_basic_credentials_file=credentials),
    }
    with WorkerProcess(tmp_path, props, {}) as worker:
        worker.start()
        found = re.search(
            r"REST API listening on (https://127\.0\.0\.1:\d+)", worker.wait_for_log("REST API listening")
        )
        assert found, worker.log_tail()
        with httpx.Client(base_url=found.group(1), verify=certificates.client_context(), timeout=10) as client:
            assert client.get("/connectors").status_code == 401
            assert client.get("/connectors", headers=basic("admin", "s3cret")).json() == []
        assert worker.terminate() == 0
