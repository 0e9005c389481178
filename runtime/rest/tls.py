"""TLS for an ``https://`` REST listener: the ``listeners.https.ssl.*`` keys, checked at start-up by building the
server's SSL context, which uvicorn then serves with (TLS 1.2 or later, OpenSSL's default ciphers)."""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from headwater.runtime.config.listeners import HTTPS
from headwater.sdk.errors import ConfigError

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class TlsSettings:
    """The files of an https listener, already checked to load: PEM certificate chain and key, or a PKCS12
    keystore; the PEM CAs client certificates are verified against."""

    certificate: str | None
    key: str | None
    key_password: str | None
    keystore: str | None
    keystore_password: str | None
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
        values = [config[HTTPS + "ssl." + name] for name in _KEYS]
        values[_KEYS.index("client.auth")] = str(values[_KEYS.index("client.auth")]).lower()
        settings = cls(*values)
        if not settings.certificate and not settings.keystore:
            raise ConfigError(
                HTTPS + "ssl.certificate.location", None, "An https listener needs a certificate (or a keystore)"
            )
        if settings.certificate and settings.keystore:
            raise ConfigError(HTTPS + "ssl.keystore.location", settings.keystore, "Give a keystore or PEM files")
        if settings.client_auth != "none" and not settings.truststore:
            raise ConfigError(
                HTTPS + "ssl.truststore.location", None, f"{settings.client_auth} client certificates need CAs"
            )
        settings.context()
        return settings

    def context(self) -> ssl.SSLContext:
        """A server SSL context from the files; ConfigError naming the key whose file does not load."""
        paths = {"certificate": self.certificate, "key": self.key, "keystore": self.keystore}
        for name, path in {**paths, "truststore": self.truststore}.items():
            if path:
                _check_readable(HTTPS + f"ssl.{name}.location", path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.keystore:
            _load_keystore(context, self.keystore, self.keystore_password)
        else:
            try:
                context.load_cert_chain(str(self.certificate), self.key, self.key_password)
            except ssl.SSLError as error:
                name = "key" if self.key else "certificate"
                raise ConfigError(
                    HTTPS + f"ssl.{name}.location", paths[name], f"Not a PEM certificate chain and its key: {error}"
                ) from None
        context.verify_mode = CLIENT_AUTH[self.client_auth]
        if self.truststore:
            try:
                context.load_verify_locations(self.truststore)
            except ssl.SSLError as error:
                raise ConfigError(HTTPS + "ssl.truststore.location", self.truststore, f"Not PEM CAs: {error}") from None
        return context

    def uvicorn_options(self) -> dict[str, Any]:
        """The keyword arguments of ``uvicorn.Config`` that serve with :meth:`context`."""

        def factory(config: object, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
            return self.context()

        return {"ssl_context_factory": factory}


_KEYS = (
    "certificate.location",
    "key.location",
    "key.password",
    "keystore.location",
    "keystore.password",
    "client.auth",
    "truststore.location",
)


def _check_readable(key: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise ConfigError(key, path, f"Cannot read the file: {error.strerror or error}") from None


def _load_keystore(context: ssl.SSLContext, path: str, password: str | None) -> None:
    """Load a PKCS12 keystore's key and certificate chain. Python's ssl module reads PEM files only, so they pass
    through a private temporary file, the key encrypted with a one-time password, removed at once."""
    key = HTTPS + "ssl.keystore.location"
    try:
        private_key, certificate, chain = pkcs12.load_key_and_certificates(
            Path(path).read_bytes(), password.encode() if password else None
        )
    except ValueError as error:
        raise ConfigError(
            key,
            path,
            f"Not a PKCS12 keystore, or a wrong {HTTPS}ssl.keystore.password ({error}); a JKS keystore "
            "converts with keytool -importkeystore -deststoretype PKCS12",
        ) from None
    if private_key is None or certificate is None:
        raise ConfigError(key, path, "The keystore holds no private key with its certificate")
    once = secrets.token_urlsafe(24).encode()
    encryption = serialization.BestAvailableEncryption(once)
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    pem += b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in (certificate, *chain))
    with tempfile.TemporaryDirectory(prefix="headwater-tls-") as directory:
        file = os.path.join(directory, "keystore.pem")
        with open(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(pem)
        context.load_cert_chain(file, password=once)
