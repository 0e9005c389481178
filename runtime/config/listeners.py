"""The listeners' worker keys: the REST listener's beyond ``listeners`` (TLS for an ``https://`` listener,
authentication, request limits) and the metrics listener's. Only definitions: :mod:`headwater.runtime.rest.security`
reads the REST ones when the REST server starts, :mod:`headwater.runtime.metrics.server` the metrics ones."""

from __future__ import annotations

from typing import Any

from headwater.sdk.config import ConfigDef, Importance, Type, at_least, non_empty_string, one_of
from headwater.sdk.errors import ConfigError


def listener_urls(key: str, value: Any) -> None:
    """One ``http://host:port`` or ``https://host:port`` URL, the port between 0 (any free port) and 65535."""
    if len(value) != 1:
        raise ConfigError(key, value, "Exactly one listener URL is supported")
    parse_listener(key, value[0])


def parse_listener(key: str, url: str) -> tuple[str, int]:
    """The host and port of an ``http://host:port`` or ``https://host:port`` listener URL; an empty host means
    every interface. :func:`is_https` tells the two apart."""
    scheme, separator, rest = url.partition("://")
    host, colon, port = rest.rstrip("/").rpartition(":")
    if (
        scheme.lower() not in ("http", "https")
        or not separator
        or not colon
        or not port.isdecimal()
        or int(port) > 65535
    ):
        raise ConfigError(key, url, "Expected a listener URL of the form http://host:port or https://host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


def is_https(url: str) -> bool:
    """Whether a listener URL (valid for :func:`parse_listener`) asks for TLS."""
    return url.lower().startswith("https://")


BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
"""The one ``rest.extension.classes`` entry Headwater implements: Kafka Connect's basic-auth extension."""

HTTPS = "listeners.https."
ADMIN_LISTENERS = "admin.listeners"
TLS_GROUP = "REST TLS"
AUTH_GROUP = "REST authentication"

LISTENER_CONFIG = (
    ConfigDef()
    .define(
        HTTPS + "ssl.certificate.location",
        Type.STRING,
        None,
        Importance.HIGH,
        "PEM file with the certificate chain an https listener presents (server certificate first); it may hold "
        "the private key too. An https listener needs this or listeners.https.ssl.keystore.location.",
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.key.location",
        Type.STRING,
        None,
        Importance.HIGH,
        "PEM file with the private key of the certificate; blank when the certificate file holds it.",
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.key.password",
        Type.PASSWORD,
        None,
        Importance.HIGH,
        "Password of an encrypted private key.",
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.keystore.location",
        Type.STRING,
        None,
        Importance.LOW,
        "PKCS12 keystore with the private key and certificate chain an https listener presents, instead of PEM "
        "files (a JKS keystore is refused: keytool -importkeystore -deststoretype PKCS12 converts it).",
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.keystore.password",
        Type.PASSWORD,
        None,
        Importance.HIGH,
        "Password of the PKCS12 keystore.",
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.client.auth",
        Type.STRING,
        "none",
        Importance.MEDIUM,
        "Client certificates on an https listener: none asks for none; requested verifies one if the client sends "
        "it; required refuses the TLS handshake without a certificate signed by a CA of "
        "listeners.https.ssl.truststore.location, and such a certificate then authenticates the client (mutual TLS).",
        one_of("none", "requested", "required"),
        group=TLS_GROUP,
    )
    .define(
        HTTPS + "ssl.truststore.location",
        Type.STRING,
        None,
        Importance.MEDIUM,
        "PEM file of the CA certificates client certificates are verified against; required when "
        "listeners.https.ssl.client.auth is requested or required.",
        group=TLS_GROUP,
    )
    .define(
        "rest.auth.basic.credentials.file",
        Type.STRING,
        None,
        Importance.HIGH,
        "Turns on HTTP basic authentication for every REST endpoint: a file of user: password lines (Java "
        "properties syntax, the format of Kafka Connect's PropertyFileLoginModule).",
        group=AUTH_GROUP,
    )
    .define(
        "rest.extension.classes",
        Type.LIST,
        "",
        Importance.LOW,
        f"Kafka Connect's REST extensions: only {BASIC_AUTH_EXTENSION} is implemented, and turns on basic "
        "authentication with the credentials file that rest.auth.jaas.config.location's KafkaConnect entry names.",
        group=AUTH_GROUP,
    )
    .define(
        "rest.auth.jaas.config.location",
        Type.STRING,
        None,
        Importance.LOW,
        "JAAS file for the basic-auth REST extension (Kafka Connect's java.security.auth.login.config): its "
        'KafkaConnect entry\'s PropertyFileLoginModule file="..." option names the credentials file. Default: the '
        "HEADWATER_JAAS_CONFIG environment variable.",
        group=AUTH_GROUP,
    )
    .define(
        "rest.authenticator",
        Type.STRING,
        None,
        Importance.LOW,
        "Name of an authenticator in the headwater.rest_authenticators entry-point group, asked about every REST "
        "request (see Security in the docs).",
        group=AUTH_GROUP,
    )
    .define(
        ADMIN_LISTENERS,
        Type.LIST,
        None,
        Importance.LOW,
        "Where the admin endpoints (/admin/loggers) are served: unset, on the listener of listeners; empty, "
        "nowhere (they answer 404). Headwater serves no listener of their own: any other value than unset, empty "
        "or the listeners value is refused.",
    )
    .define(
        "rest.request.body.max.bytes",
        Type.LONG,
        4 * 1024 * 1024,
        Importance.LOW,
        "Largest REST request body accepted; a larger one is refused with HTTP 413 before it is read.",
        at_least(1),
    )
)

METRICS_GROUP = "Metrics"


def port_number(key: str, value: Any) -> None:
    """A port number from 0 (any free port) to 65535."""
    if value is not None and not 0 <= int(value) <= 65535:
        raise ConfigError(key, value, "Expected a port number between 0 (any free port) and 65535")


METRICS_CONFIG = (
    ConfigDef()
    .define(
        "metrics.port",
        Type.INT,
        None,
        Importance.LOW,
        "Port of a listener serving only the Prometheus metrics (GET /metrics), plain HTTP without authentication; "
        "0 takes a free port (logged). Unset, the metrics are served on the REST listener only, at /metrics, behind "
        "its TLS and authentication. The worker refuses to start when the port cannot be bound.",
        port_number,
        group=METRICS_GROUP,
    )
    .define(
        "metrics.host",
        Type.STRING,
        "127.0.0.1",
        Importance.LOW,
        "Interface the metrics.port listener binds; 0.0.0.0 for every one. The default binds the loopback interface "
        "only.",
        non_empty_string,
        group=METRICS_GROUP,
    )
)
"""The worker keys of the metrics listener."""
