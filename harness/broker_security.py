"""A SASL_SSL client listener for :class:`~headwater.harness.broker.LocalKafkaBroker`: TLS with a certificate from
a test CA and SCRAM users created when the storage is formatted (KRaft keeps SCRAM credentials in its metadata log,
so ``kafka-storage format --add-scram`` is how a new cluster gets its first users; Kafka 3.5+).

Only the clients' listener is secured: the inter-broker listener (``PLAINTEXT``, on the broker's ``port``) and the
controller listener stay in plain text, so the harness checks the broker is ready, and tests create topics or read
what was written, without credentials. Key and certificates are PEM text (Kafka 2.7+: ``ssl.keystore.type=PEM``),
so a test makes them with any CA library (``trustme``) and no JKS keystore or ``keytool`` is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
LISTENER = "SASL_SSL"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
_PKCS8_HEADERS = ("-----BEGIN PRIVATE KEY-----", "-----BEGIN ENCRYPTED PRIVATE KEY-----")


@dataclass(frozen=True)
class SaslSslListener:
    """What the broker's ``SASL_SSL`` listener presents and accepts.

    ``certificate_chain_pem``: the broker's certificate first, then any intermediates (the certificate must name
    ``127.0.0.1``, where the broker listens, for clients that verify the host name, librdkafka's default).
    ``private_key_pem``: its unencrypted key in PKCS#8 (``BEGIN PRIVATE KEY``), the only PEM key form Kafka reads.
    ``users``: SCRAM user name to password, created for every one of ``mechanisms``.
    """

    certificate_chain_pem: str
    private_key_pem: str
    users: Mapping[str, str]
    mechanisms: Sequence[str] = field(default=SCRAM_MECHANISMS)

    def __post_init__(self) -> None:
        if not self.private_key_pem.lstrip().startswith(_PKCS8_HEADERS):
            raise ValueError("private_key_pem must be a PKCS#8 key ('BEGIN PRIVATE KEY'): Kafka reads no other PEM key")
        unknown = [mechanism for mechanism in self.mechanisms if mechanism not in SCRAM_MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(f"mechanisms must be among {SCRAM_MECHANISMS}, not {list(self.mechanisms)}")
        if not self.users:
            raise ValueError("a SASL_SSL listener needs at least one SCRAM user")
        for name, password in self.users.items():
            if not name or any(c in name + password for c in ",=[]") or not password:
                raise ValueError(f"SCRAM user {name!r}: name and password must be non-empty, without , = [ or ]")

    def server_properties(self, data_dir: Path) -> str:
        """The listener's lines of ``server.properties``; writes its key store (key and chain) into ``data_dir``."""
        keystore = data_dir / "sasl-ssl-keystore.pem"
        keystore.write_text(self.private_key_pem.strip() + "\n" + self.certificate_chain_pem.strip() + "\n")
        keystore.chmod(0o600)
        prefix = f"listener.name.{LISTENER.lower()}"
        lines = [
            f"sasl.enabled.mechanisms={','.join(self.mechanisms)}",
            f"{prefix}.sasl.enabled.mechanisms={','.join(self.mechanisms)}",
            *(f"{prefix}.{mechanism.lower()}.sasl.jaas.config={_SCRAM_LOGIN}" for mechanism in self.mechanisms),
            f"{prefix}.ssl.keystore.type=PEM",
            f"{prefix}.ssl.keystore.location={keystore}",
            f"{prefix}.ssl.client.auth=none",
        ]
        return "\n".join(lines) + "\n"

    def format_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create every user for every mechanism."""
        return [
            argument
            for mechanism in self.mechanisms
            for name, password in sorted(self.users.items())
            for argument in ("--add-scram", f"{mechanism}=[name={name},password={password}]")
        ]


def listener_lines(port: int, controller_port: int, secure_port: int | None) -> str:
    """``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` of a broker on 127.0.0.1,
    with a ``SASL_SSL`` listener on ``secure_port`` when given."""
    listeners = [f"PLAINTEXT://127.0.0.1:{port}"]
    protocols = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
    if secure_port is not None:
        listeners.append(f"{LISTENER}://127.0.0.1:{secure_port}")
        protocols.append(f"{LISTENER}:{LISTENER}")
    return (
        f"listeners={','.join(listeners)},CONTROLLER://127.0.0.1:{controller_port}\n"
        f"advertised.listeners={','.join(listeners)}\n"
        f"listener.security.protocol.map={','.join(protocols)}\n"
    )
