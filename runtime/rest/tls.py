"""TLS for an ``https://`` REST listener: the ``listeners.https.ssl.*`` keys, checked at start-up by loading the
files into an SSL context, and handed to uvicorn."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.listener_config import HTTPS
from headwater.sdk.errors import ConfigError

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class TlsSettings:
    """The files of an https listener, already checked to load."""

    certificate: str
    key: str | None
    key_password: str | None
    client_auth: str
    truststore: str | None

    @property
    def clients_verified(self) -> bool:
        """Whether every connection comes from a client with a certificate the truststore's CAs signed."""
        return self.client_auth == "required"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TlsSettings:
        """The TLS settings of the worker config; ConfigError naming the key of a missing, unreadable or invalid
        file."""
        if config[HTTPS + "ssl.keystore.location"]:
            raise ConfigError(
                HTTPS + "ssl.keystore.location",
                config[HTTPS + "ssl.keystore.location"],
                f"Keystores are not read: give PEM files in {HTTPS}ssl.certificate.location and ssl.key.location",
            )
        certificate = config[HTTPS + "ssl.certificate.location"]
        if not certificate:
            raise ConfigError(HTTPS + "ssl.certificate.location", None, "An https listener needs a certificate")
        client_auth = str(config[HTTPS + "ssl.client.auth"]).lower()
        truststore = config[HTTPS + "ssl.truststore.location"]
        if client_auth != "none" and not truststore:
            raise ConfigError(
                HTTPS + "ssl.truststore.location", None, f"Client certificates ({client_auth}) need the CAs to trust"
            )
        key, password = config[HTTPS + "ssl.key.location"], config[HTTPS + "ssl.key.password"]
        settings = cls(certificate, key, password, client_auth, truststore)
        settings.context()
        return settings

    def context(self) -> ssl.SSLContext:
        """A server SSL context from the files; ConfigError naming the key whose file does not load."""
        files = {"ssl.certificate.location": self.certificate, "ssl.key.location": self.key}
        for key, path in {**files, "ssl.truststore.location": self.truststore}.items():
            if path:
                _check_readable(HTTPS + key, path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.certificate, self.key, self.key_password)
        except ssl.SSLError as error:
            key = "ssl.key.location" if self.key else "ssl.certificate.location"
            raise ConfigError(HTTPS + key, files[key], f"Not a PEM certificate chain and its key: {error}") from None
        context.verify_mode = CLIENT_AUTH[self.client_auth]
        if self.truststore:
            try:
                context.load_verify_locations(self.truststore)
            except ssl.SSLError as error:
                raise ConfigError(HTTPS + "ssl.truststore.location", self.truststore, f"Not PEM CAs: {error}") from None
        return context

    def uvicorn_options(self) -> dict[str, Any]:
        """The keyword arguments of ``uvicorn.Config`` that serve these settings."""
        return {
            "ssl_certfile": self.certificate,
            "ssl_keyfile": self.key,
            "ssl_keyfile_password": self.key_password,
            "ssl_cert_reqs": CLIENT_AUTH[self.client_auth],
            "ssl_ca_certs": self.truststore,
        }


def _check_readable(key: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise ConfigError(key, path, f"Cannot read the file: {error.strerror or error}") from None
