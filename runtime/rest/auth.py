"""Who may call the REST API: the :class:`Authenticator` protocol, HTTP basic authentication against a credentials
file in the format of Kafka Connect's ``PropertyFileLoginModule``, the small JAAS file that names such a file, and
authenticators installed under the ``headwater.rest_authenticators`` entry-point group."""

from __future__ import annotations

import base64
import binascii
import hmac
import inspect
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from headwater.runtime.config.listeners import BASIC_AUTH_EXTENSION
from headwater.runtime.config.properties import read_properties
from headwater.runtime.plugins import installed_entry_points
from headwater.sdk.errors import ConfigError

AUTHENTICATOR_ENTRY_POINT_GROUP = "headwater.rest_authenticators"
JAAS_ENV = "HEADWATER_JAAS_CONFIG"
REALM = "Headwater"


@runtime_checkable
class Authenticator(Protocol):
    """Decides who sent a REST request. Called on the server's event loop for every request, before the request
    body is read; it must not block for long.

    An ``authenticate`` that also takes a keyword argument ``client_certificate`` gets the
    :class:`~headwater.runtime.rest.client_certificate.ClientCertificate` the listener verified (mutual TLS,
    ``listeners.https.ssl.client.auth`` ``requested`` or ``required``), or None when the client sent none, so that
    it can authorise by certificate subject or SAN; one with only the three arguments is called as before."""

    def authenticate(self, method: str, path: str, headers: Mapping[str, str]) -> str | None:
        """The principal (a user name) that sent the request, or None to refuse it with HTTP 401. ``headers``
        holds the request's headers, names in lower case."""

    def challenge(self) -> str:
        """The ``WWW-Authenticate`` header of a 401 response."""


CLIENT_CERTIFICATE = "client_certificate"
"""The keyword argument an authenticator's ``authenticate`` takes to be given the verified client certificate."""


def takes_client_certificate(authenticator: Authenticator) -> bool:
    """Whether ``authenticator.authenticate`` takes the ``client_certificate`` keyword argument (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(authenticator.authenticate).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature Python can read: call it the old way
        return False
    return any(
        (p.name == CLIENT_CERTIFICATE and p.kind is not p.POSITIONAL_ONLY) or p.kind is p.VAR_KEYWORD
        for p in parameters
    )


class BasicAuthenticator:
    """HTTP basic authentication against ``credentials`` (user name -> password); passwords are compared with
    ``hmac.compare_digest``."""

    def __init__(self, credentials: Mapping[str, str], realm: str = REALM) -> None:
        self.credentials = {user.encode(): password.encode() for user, password in credentials.items()}
        self.realm = realm

    @classmethod
    def from_file(cls, key: str, path: str) -> BasicAuthenticator:
        """Read a credentials file (``user: password`` lines, Java properties syntax); ConfigError naming ``key``
        when it cannot be read or names no user."""
        try:
            credentials = read_properties(path).values
        except ConfigError as error:
            raise ConfigError(key, path, f"Cannot read the credentials file: {error}") from None
        if not credentials:
            raise ConfigError(key, path, "The credentials file names no user")
        return cls(credentials)

    def authenticate(self, method: str, path: str, headers: Mapping[str, str]) -> str | None:
        scheme, _, encoded = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, colon, password = base64.b64decode(encoded.strip(), validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return None
        expected = self.credentials.get(user)
        # an unknown user costs a comparison too, so that the answer's timing says little about who exists
        matched = hmac.compare_digest(password, expected if expected is not None else password + b"\0")
        return user.decode("utf-8", "replace") if colon and expected is not None and matched else None

    def challenge(self) -> str:
        return f'Basic realm="{self.realm}", charset="UTF-8"'

    def __repr__(self) -> str:
        return f"BasicAuthenticator({len(self.credentials)} users)"


_JAAS_ENTRY = re.compile(r"\bKafkaConnect\s*\{(?P<body>.*?)\}\s*;", re.DOTALL)
_FILE_OPTION = re.compile(r"\bPropertyFileLoginModule\s+\w+[^;]*?\bfile\s*=\s*\"(?P<file>[^\"]*)\"", re.DOTALL)


def jaas_credentials_file(key: str, jaas_path: str) -> str:
    """The credentials file the ``KafkaConnect`` entry of a JAAS file names::

        KafkaConnect {
          org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
          file="/etc/headwater/credentials.properties";
        };

    ConfigError naming ``key`` when the file cannot be read or has no such entry."""
    try:
        text = Path(jaas_path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(key, jaas_path, f"Cannot read the JAAS file: {error.strerror or error}") from None
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.DOTALL)
    entry = _JAAS_ENTRY.search(text)
    found = _FILE_OPTION.search(entry.group("body")) if entry else None
    if found is None:
        raise ConfigError(
            key, jaas_path, 'Expected a KafkaConnect { ... PropertyFileLoginModule required file="..."; }; entry'
        )
    return found.group("file")


def configured_authenticator(config: Mapping[str, Any]) -> Authenticator | None:
    """The authenticator the worker config asks for (at most one way), or None when REST authentication is off."""
    extensions = list(config["rest.extension.classes"])
    unknown = [name for name in extensions if name != BASIC_AUTH_EXTENSION]
    if unknown:
        raise ConfigError("rest.extension.classes", ",".join(extensions), f"Only {BASIC_AUTH_EXTENSION} is implemented")
    chosen: list[tuple[str, Authenticator]] = []
    if config["rest.auth.basic.credentials.file"]:
        key = "rest.auth.basic.credentials.file"
        chosen.append((key, BasicAuthenticator.from_file(key, config[key])))
    if extensions:
        key = "rest.auth.jaas.config.location"
        jaas = config[key] or os.environ.get(JAAS_ENV)
        if not jaas:
            raise ConfigError(key, None, f"The basic-auth REST extension needs a JAAS file (this key or ${JAAS_ENV})")
        credentials = jaas_credentials_file(key, jaas)
        chosen.append(("rest.extension.classes", BasicAuthenticator.from_file(key, credentials)))
    if config["rest.authenticator"]:
        chosen.append(("rest.authenticator", installed_authenticator(config["rest.authenticator"], config)))
    if len(chosen) > 1:
        names = " and ".join(key for key, _ in chosen)
        raise ConfigError(chosen[1][0], config[chosen[1][0]], f"Choose one way to authenticate, not {names}")
    return chosen[0][1] if chosen else None


def installed_authenticator(name: str, config: Mapping[str, Any]) -> Authenticator:
    """Load the ``headwater.rest_authenticators`` entry point ``name`` (a callable taking the worker config) and
    make the authenticator."""
    found = [entry for entry in installed_entry_points(AUTHENTICATOR_ENTRY_POINT_GROUP) if entry.name == name]
    if not found:
        raise ConfigError("rest.authenticator", name, f"No such entry point in {AUTHENTICATOR_ENTRY_POINT_GROUP}")
    authenticator = found[0].load()(config)
    if not isinstance(authenticator, Authenticator):
        raise ConfigError("rest.authenticator", name, "Not an authenticator (authenticate and challenge methods)")
    return authenticator
