"""The Avro converter against a registry that serves HTTPS only, with a certificate of a CA of the test's own: the
CA given in PEM (by its own key or Java's truststore key) lets the converter in; without it the converter refuses
the registry, naming it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from headwater.harness.schema_registry import LocalSchemaRegistry
from headwater.runtime.converters import AvroConverter, load_converter
from headwater.sdk.errors import RetriableError
from headwater.sdk.schemas import INT64, struct

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PING = struct("tls.Ping", n=INT64)


@pytest.fixture(scope="module")
def tls_registry(schema_registry_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A registry on HTTPS only (the session's registry shows that one can run here), and its CA's PEM file."""
    del schema_registry_url
    directory = tmp_path_factory.mktemp("registry-tls")
    ca = trustme.CA()
    server = ca.issue_cert("localhost")
    certificate, key, ca_file = directory / "cert.pem", directory / "key.pem", directory / "ca.pem"
    server.cert_chain_pems[0].write_to_path(str(certificate))
    server.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    with LocalSchemaRegistry(tls=(certificate, key, ca_file)) as registry:
        assert registry.url.startswith("https://")
        yield registry.url, ca_file


def converter(url: str, **settings: str) -> AvroConverter:
    made = load_converter("avro", {"schema.registry.url": url, **settings}, is_key=False)
    assert isinstance(made, AvroConverter)
    return made


@pytest.mark.parametrize(
    "trust",
    [
        {"schema.registry.ssl.ca.location": "{ca}"},
        {"schema.registry.ssl.truststore.location": "{ca}", "schema.registry.ssl.truststore.type": "PEM"},
    ],
    ids=["ca-location", "pem-truststore"],
)
def test_the_registrys_ca_in_pem_lets_the_converter_in(
    tls_registry: tuple[str, Path], trust: dict[str, str], unique_name: str
) -> None:
    url, ca = tls_registry
    made = converter(url, **{key: value.format(ca=ca) for key, value in trust.items()})
    try:
        data = made.from_connect(unique_name, PING, {"n": 7})
        assert made.to_connect_data(unique_name, data) == (PING, {"n": 7})
    finally:
        made.close()


def test_without_the_ca_the_registry_is_refused_naming_it(tls_registry: tuple[str, Path], unique_name: str) -> None:
    url, _ca = tls_registry
    made = converter(url)
    try:
        with pytest.raises(RetriableError, match=rf"cannot reach the Schema Registry at {url}.*CERTIFICATE_VERIFY"):
            made.from_connect(unique_name, PING, {"n": 7})
    finally:
        made.close()
