"""The settings a worker gives its Kafka clients, from the worker's config: one rule for both modes.

Every client of the worker (its stores and groups, its tasks' producers and consumers, its admin clients) gets the
worker's top-level ``security.protocol``, ``ssl.*`` and ``sasl.*`` keys; a client of one kind then gets the keys
prefixed with its kind (``producer.``, ``consumer.``, ``admin.``), prefix removed, which win. A connector's
``producer.override.*`` (a source's) and ``consumer.override.*`` (a sink's) keys (KIP-458) win over both, for its
tasks' clients (:data:`CONNECTOR_CLIENTS`).

The clients are librdkafka's, which spell some security settings differently from Java clients: a worker file
with a Java-only spelling (:data:`JAVA_ONLY_SECURITY`) is refused, naming the key and librdkafka's spelling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transport.kafka import KafkaTransport
from headwater.sdk.errors import ConfigError

SHARED_CLIENT_PREFIXES = ("security.protocol", "ssl.", "sasl.")
"""Top-level worker keys every Kafka client of the worker gets."""

_TRUST_STORE = "librdkafka reads no Java trust store: give the CA certificates as a PEM file in ssl.ca.location"
_KEY_STORE = (
    "librdkafka reads a PKCS#12 key store (ssl.keystore.location, ssl.keystore.password) or PEM files "
    "(ssl.certificate.location, ssl.key.location, ssl.key.password)"
)
JAVA_ONLY_SECURITY: Mapping[str, str] = {
    "sasl.jaas.config": "librdkafka has no JAAS: give sasl.username and sasl.password (PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512) or the sasl.oauthbearer.* settings",
    "sasl.client.callback.handler.class": "librdkafka loads no Java classes",
    "sasl.login.callback.handler.class": "librdkafka loads no Java classes",
    "ssl.truststore.location": _TRUST_STORE,
    "ssl.truststore.password": _TRUST_STORE,
    "ssl.truststore.type": _TRUST_STORE,
    "ssl.truststore.certificates": "give the CA certificates in ssl.ca.pem, or as a PEM file in ssl.ca.location",
    "ssl.keystore.type": _KEY_STORE,
    "ssl.keystore.certificate.chain": "give the certificate chain in ssl.certificate.pem or ssl.certificate.location",
    "ssl.keystore.key": "give the private key in ssl.key.pem or ssl.key.location",
}
"""Java client security keys librdkafka does not take, each with what to write instead."""

CONNECTOR_CLIENTS: Mapping[str, tuple[str, ...]] = {"source": ("producer",), "sink": ("consumer", "producer")}
"""The Kafka clients the worker makes for the tasks of a connector, by the connector's kind (``source``,
``sink``; a sink's producer writes its dead-letter queue): each gets the connector's :func:`override_prefix`
keys. Other override keys reach no client."""


def override_prefix(client: str) -> str:
    """The prefix of a connector's keys for its tasks' ``client`` (``producer.override.``)."""
    return f"{client}.override."


def client_settings(values: Mapping[str, Any], client: str | None = None) -> dict[str, Any]:
    """The settings of a worker's ``client`` (``producer``, ``consumer``, ``admin``; ``None``: the keys every
    client shares) from the worker's config ``values``."""
    found = {k: v for k, v in values.items() if k.startswith(SHARED_CLIENT_PREFIXES)}
    if client is not None:
        prefix = f"{client}."
        found.update({k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)})
    for key in sorted(found.keys() & JAVA_ONLY_SECURITY.keys()):
        written = key if key in values and key.startswith(SHARED_CLIENT_PREFIXES) else f"{client}.{key}"
        raise ConfigError(written, None, f"a Java client setting; {JAVA_ONLY_SECURITY[key]}")
    return found


def admin_settings(values: Mapping[str, Any], bootstrap_servers: str) -> dict[str, Any]:
    """Settings of a worker's admin client (the broker check, the cluster id)."""
    return {**client_settings(values, "admin"), "bootstrap.servers": bootstrap_servers}


def worker_transport(values: Mapping[str, Any], bootstrap_servers: str) -> KafkaTransport:
    """The Kafka transport of a worker whose config is ``values``, in either mode: every client it makes gets the
    shared keys; its admin clients (dead-letter and source topics, the offsets API, the cluster's slots) also get
    the ``admin.`` keys; producers and consumers get theirs from the worker (:func:`client_settings`). Raises
    ConfigError for a Java-only security key, of any client, before any client is made."""
    for client in ("producer", "consumer"):
        client_settings(values, client)
    return KafkaTransport(bootstrap_servers, client_settings(values), client_settings(values, "admin"))
