"""The verified client certificate of a REST request over mutual TLS, for an authenticator to authorise by.

uvicorn does not put the TLS peer in the ASGI scope, so the REST server serves with :class:`TlsScopeProtocol`:
uvicorn's h11 protocol that, on a TLS connection, adds the ASGI TLS extension (``scope["extensions"]["tls"]``,
https://asgi.readthedocs.io/en/latest/extensions.html#tls) to each request's scope, with the client's certificate
only when the handshake verified it against the listener's truststore. :meth:`ClientCertificate.from_scope` reads
it back (whoever filled it in)."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from uvicorn.protocols.http.h11_impl import H11Protocol

App = Callable[[Any, Any, Any], Awaitable[None]]


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate the listener verified: its ``subject`` as an RFC 4514 string (``CN=alice,O=Example``),
    its subject alternative names as ``(type, value)`` pairs (``("DNS", "host.example")``, ``("email", ...)``,
    ``("URI", ...)``, ``("IP", ...)``), and the certificate itself in ``pem``."""

    subject: str
    common_name: str | None
    sans: tuple[tuple[str, str], ...]
    pem: str

    @classmethod
    def from_pem(cls, pem: str) -> ClientCertificate:
        certificate = x509.load_pem_x509_certificate(pem.encode("ascii"))
        names = certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        try:
            extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            extension = x509.SubjectAlternativeName([])
        sans = tuple((_SAN_TYPES[type(name)], str(name.value)) for name in extension if type(name) in _SAN_TYPES)
        return cls(certificate.subject.rfc4514_string(), str(names[0].value) if names else None, sans, pem)

    @classmethod
    def from_scope(cls, scope: Any) -> ClientCertificate | None:
        """The verified client certificate of the request whose ASGI scope is ``scope``; None when the request did
        not come over TLS or its client sent no certificate (or one the listener could not verify)."""
        tls = (scope.get("extensions") or {}).get("tls") or {}
        chain = tls.get("client_cert_chain") or []
        if not chain or tls.get("client_cert_error") is not None:
            return None
        return cls.from_pem(chain[0])

    def __repr__(self) -> str:
        return f"ClientCertificate({self.subject!r}, sans={list(self.sans)!r})"


_SAN_TYPES: dict[type, str] = {
    x509.DNSName: "DNS",
    x509.RFC822Name: "email",
    x509.UniformResourceIdentifier: "URI",
    x509.IPAddress: "IP",
}


def tls_extension(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> dict[str, Any]:
    """The ASGI TLS extension of a connection: the client's certificate only when the handshake verified it
    (``getpeercert()`` is empty for a certificate that was not verified, or none)."""
    verified = bool(ssl_object.getpeercert())
    der = ssl_object.getpeercert(binary_form=True) if verified else None
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": x509.load_der_x509_certificate(der).subject.rfc4514_string() if der else None,
        "client_cert_error": None,
        "tls_version": None,
        "cipher_suite": None,
    }


class TlsScopeProtocol(H11Protocol):
    """uvicorn's h11 protocol, adding the ASGI TLS extension to the scope of every request of a TLS connection
    (unless the scope has one already)."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return
        tls = tls_extension(ssl_object)
        app: App = self.app

        async def with_tls(scope: Any, receive: Any, send: Any) -> None:
            extensions = scope.setdefault("extensions", {})
            extensions.setdefault("tls", tls)
            await app(scope, receive, send)

        self.app = with_tls
