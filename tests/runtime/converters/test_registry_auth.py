"""The Schema Registry converters against a registry that asks for HTTP basic authentication: the credentials from
``basic.auth.user.info`` (USER_INFO) or from the URL (URL, Confluent's default source) let the converter in; wrong
or missing ones are refused with an error that names the keys to check, not retried as an outage."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from headwater.harness.schema_registry import LocalSchemaRegistry
from headwater.runtime.converters import AvroConverter, load_converter
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.schemas import INT64, struct

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PING = struct("auth.Ping", n=INT64)
USER, PASSWORD = "connect", "s3cret:with-colon"


@pytest.fixture(scope="module")
def auth_registry(schema_registry_url: str) -> Iterator[str]:
    """A registry that answers only ``USER`` with ``PASSWORD`` (the session's registry shows that one can run)."""
    del schema_registry_url
    with LocalSchemaRegistry(basic_auth=(USER, PASSWORD)) as registry:
        yield registry.url


def converter(url: str, **settings: str) -> AvroConverter:
    made = load_converter("avro", {"schema.registry.url": url, **settings}, is_key=False)
    assert isinstance(made, AvroConverter)
    return made


def round_trip(made: AvroConverter, topic: str) -> None:
    try:
        data = made.from_connect(topic, PING, {"n": 7})
        assert made.to_connect_data(topic, data) == (PING, {"n": 7})
    finally:
        made.close()


def test_user_info_credentials_let_the_converter_in(auth_registry: str, unique_name: str) -> None:
    made = converter(
        auth_registry, **{"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": f"{USER}:{PASSWORD}"}
    )
    round_trip(made, unique_name)


def test_credentials_in_the_url_let_the_converter_in(auth_registry: str, unique_name: str) -> None:
    from urllib.parse import quote

    with_credentials = auth_registry.replace("://", f"://{quote(USER)}:{quote(PASSWORD, safe='')}@", 1)
    round_trip(converter(with_credentials), unique_name)


@pytest.mark.parametrize(
    "settings",
    [
        {"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": f"{USER}:wrong"},
        {},
    ],
    ids=["wrong-password", "no-credentials"],
)
def test_wrong_or_missing_credentials_are_refused_naming_the_keys(
    auth_registry: str, settings: dict[str, str], unique_name: str
) -> None:
    made = converter(auth_registry, **settings)
    try:
        with pytest.raises(ConnectError, match=r"HTTP 401.*basic\.auth\.user\.info") as refused:
            made.from_connect(unique_name, PING, {"n": 7})
        assert not isinstance(refused.value, RetriableError)  # a refusal, not an outage to wait out
    finally:
        made.close()
