"""A Kafka broker whose clients' listener asks for TLS and SCRAM, for the tests of the worker's Kafka client
security: a test CA (``trustme``) signs the broker's certificate, one SCRAM user is created when the storage is
formatted, and :meth:`SecureKafka.worker_props` are the settings a worker file needs to reach it.

The broker's ``PLAINTEXT`` listener (``plain_bootstrap_servers``) stays open for the tests' own set-up and checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from cryptography.hazmat.primitives import serialization

from headwater.harness.broker import LocalKafkaBroker
from headwater.harness.broker_security import SaslSslListener

USER = "connect-worker"
PASSWORD = "worker-secret"
MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class SecureKafka:
    """Where a SASL_SSL broker answers and what a client needs to be let in."""

    bootstrap_servers: str
    """The SASL_SSL listener."""
    plain_bootstrap_servers: str
    """The PLAINTEXT listener, for the tests' own clients."""
    ca_path: Path
    """The test CA's certificate (PEM), for ``ssl.ca.location``."""
    broker: LocalKafkaBroker

    def worker_props(self, **overrides: Any) -> dict[str, Any]:
        """A worker file's Kafka settings: SASL_SSL with SCRAM and the CA, nothing more; ``overrides`` (``_`` in
        keys for ``.``, ``None`` removes a key) win."""
        props: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "ssl.ca.location": str(self.ca_path),
        }
        props.update({key.replace("_", "."): value for key, value in overrides.items()})
        return {key: value for key, value in props.items() if value is not None}


def broker_listener(directory: Path) -> tuple[SaslSslListener, Path]:
    """A SASL_SSL listener with a certificate for 127.0.0.1 from a new test CA, and the CA's PEM file (written
    into ``directory``)."""
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    pem, pkcs8 = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    pkcs8_pem = key.private_bytes(pem, pkcs8, serialization.NoEncryption())
    chain = "".join(blob.bytes().decode() for blob in leaf.cert_chain_pems)
    ca_path = directory / "test-ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    return SaslSslListener(chain, pkcs8_pem.decode(), {USER: PASSWORD}), ca_path


@contextmanager
def secure_kafka(directory: Path) -> Iterator[SecureKafka]:
    """A SASL_SSL broker from the local jars with its data under ``directory``, stopped on exit. Raises
    :class:`~headwater.harness.broker.BrokerUnavailable` when none can be started."""
    directory.mkdir(parents=True, exist_ok=True)
    listener, ca_path = broker_listener(directory)
    with LocalKafkaBroker(data_dir=directory / "broker", sasl_ssl=listener) as broker:
        yield SecureKafka(broker.secure_bootstrap_servers, broker.bootstrap_servers, ca_path, broker)
