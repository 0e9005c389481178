"""REST servers with TLS and authentication for the security tests: an in-memory worker's REST API served by the
real RestServer (uvicorn) behind the RestSecurity its worker config asks for, and certificates from a test CA."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.rest.security import RestSecurity
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker


def rest_server(host: str = "127.0.0.1", **props: Any) -> RestServer:
    """An unstarted REST server of a fresh in-memory worker whose config is ``props`` (``_`` in keys for ``.``)."""
    config = {"listeners": f"http://{host}:0", **{key.replace("_", "."): value for key, value in props.items()}}
    worker = Worker(config, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    return RestServer(create_app(StandaloneHerder(worker)), host, 0, RestSecurity.from_config(worker.config))


@contextmanager
def serving(host: str = "127.0.0.1", **props: Any) -> Iterator[RestServer]:
    """:func:`rest_server`, started for the block."""
    server = rest_server(host, **props)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Certificates:
    """A server CA and a client CA (trustme), with the files an https listener and its clients need in ``dir``."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.server_ca = trustme.CA()
        self.client_ca = trustme.CA()
        server = self.server_ca.issue_cert("127.0.0.1", "localhost")
        self.server = server
        self.server_certificate = self._write("server.pem", b"".join(blob.bytes() for blob in server.cert_chain_pems))
        self.server_key = self._write("server.key", server.private_key_pem.bytes())
        self.client_cas = self._write("client-cas.pem", self.client_ca.cert_pem.bytes())

    def _write(self, name: str, data: bytes) -> str:
        path = self.dir / name
        path.write_bytes(data)
        return str(path)

    def keystore(self, password: str) -> str:
        """The server's key and certificate chain as a PKCS12 keystore file (Kafka Connect's keystore format)."""
        key = serialization.load_pem_private_key(self.server.private_key_pem.bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        leaf, *chain = (x509.load_pem_x509_certificate(blob.bytes()) for blob in self.server.cert_chain_pems)
        encryption = serialization.BestAvailableEncryption(password.encode())
        return self._write("server.p12", pkcs12.serialize_key_and_certificates(b"server", key, leaf, chain, encryption))

    def https_props(self, **extra: Any) -> dict[str, Any]:
        """Worker keys of an https listener on a free loopback port with these certificates."""
        return {
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.certificate.location": self.server_certificate,
            "listeners.https.ssl.key.location": self.server_key,
            **{key.replace("_", "."): value for key, value in extra.items()},
        }

    def client_context(self, ca: trustme.CA | None = None, name: str = "client") -> ssl.SSLContext:
        """A client context trusting the server CA, presenting a certificate of ``ca`` (None: no certificate)."""
        context = ssl.create_default_context()
        self.server_ca.configure_trust(context)
        if ca is not None:
            ca.issue_cert(f"{name}@example.com", common_name=name).configure_cert(context)
        return context
