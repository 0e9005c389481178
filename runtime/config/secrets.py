"""Which connector config keys are secret, and hiding their values: the one home of that rule, used by the REST
API, config validation, status traces and logs (:mod:`headwater.runtime.logs.scrubber`).

A key is secret when the connector's full definition (the runtime's keys plus its own) gives it the type
``PASSWORD``, or when its name is one of the Kafka clients' well-known secret settings (Java client and librdkafka
names), with or without a prefix (``producer.override.sasl.jaas.config``, ``source.ssl.key.password``), or ends
in ``.password``. Such a value is shown as ``[hidden]`` (Kafka Connect's word in validate responses and logs),
and a ``[hidden]`` sent back in a PUT or PATCH keeps the stored value (:func:`restore_hidden`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache
from typing import Any

from headwater.runtime.config.connector import connector_config_def
from headwater.runtime.errors import BadRequestError
from headwater.runtime.plugins import loaded_connector_class, resolve_connector_class
from headwater.sdk.config import Type
from headwater.sdk.connector import Connector
from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import REFERENCE

log = logging.getLogger(__name__)

HIDDEN = "[hidden]"
"""What a secret value is shown as (Kafka's ``Password.toString``)."""

SECRET_NAMES = (
    "password",
    "sasl.jaas.config",
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.key.pem",
    "ssl.keystore.key",
    "ssl_key",
    "basic.auth.user.info",
    "bearer.auth.token",
    "secret.key",
    "session.token",
)
"""Secret settings by name (last dotted parts), wherever they appear under a prefix: the Kafka Java clients',
librdkafka's, the schema registry client's and Hadoop S3A's (``spark.hadoop.fs.s3a.secret.key``)."""

MIN_SCRUBBED_LENGTH = 4
"""Secret values shorter than this are not searched for in free text (traces, log lines): replacing every ``a`` in
a trace would make it unreadable, and a value that short protects nothing."""


def is_secret(key: str, password_keys: Collection[str] = ()) -> bool:
    """Whether ``key`` is secret: one of ``password_keys`` (the ``PASSWORD`` keys of the connector's definition)
    or a well-known secret name, under any prefix."""
    if key in password_keys:
        return True
    lowered = key.lower()
    return any(lowered == name or lowered.endswith(("." + name, "_" + name)) for name in SECRET_NAMES)


@lru_cache(maxsize=256)
def _password_keys_of(cls: type[Connector]) -> frozenset[str]:
    return frozenset(key.name for key in connector_config_def(cls()) if key.type is Type.PASSWORD)


def password_keys(config: Mapping[str, Any], stored: bool = False) -> frozenset[str]:
    """The ``PASSWORD`` keys of the full definition of the connector ``config`` names; none when its class cannot
    be found (only the well-known names are secret then). A ``stored`` config, one the worker accepted already, may
    import its class's module; any other only finds a class installed or imported already (a request's config is
    checked against the worker's ``connector.class.allowed.modules`` before its class is loaded)."""
    spec = config.get("connector.class")
    try:
        cls = (resolve_connector_class(spec) if stored else loaded_connector_class(str(spec))) if spec else None
    except ConfigError:
        return frozenset()
    if cls is None:
        return frozenset()
    try:
        return _password_keys_of(cls)
    except Exception:  # a class that cannot be made: nothing more than the well-known names to go by
        return frozenset()


def only_references(value: Any) -> bool:
    """Whether ``value`` is nothing but config provider references (``${file:/path:key}``): it names where a secret
    is, not the secret, and is shown as it is stored, as Kafka Connect shows it."""
    return isinstance(value, str) and REFERENCE.search(value) is not None and not REFERENCE.sub("", value).strip()


def hide(config: Mapping[str, Any], keys: Collection[str] | None = None) -> dict[str, Any]:
    """``config`` with every secret value (not ``None``, not only references) shown as ``[hidden]``; ``keys`` are
    the connector's ``PASSWORD`` keys (found from ``config`` itself when ``None``: :func:`password_keys`)."""
    keys = password_keys(config) if keys is None else keys
    return {
        k: HIDDEN if v is not None and is_secret(k, keys) and not only_references(v) else v for k, v in config.items()
    }


def secret_values(configs: Iterable[Mapping[str, Any]], keys: Collection[str] | None = None) -> set[str]:
    """The secret values of ``configs`` long enough to be searched for in free text."""
    found: set[str] = set()
    for config in configs:
        own = password_keys(config) if keys is None else keys
        found.update(
            str(v) for k, v in config.items() if v is not None and is_secret(k, own) and not only_references(v)
        )
    return {value for value in found if len(value) >= MIN_SCRUBBED_LENGTH and value != HIDDEN}


def warn_short_secrets(owner: str, config: Mapping[str, Any], keys: Collection[str] = ()) -> list[str]:
    """Log one warning naming ``owner`` (``connector NAME``, ``the worker config``) and each secret key of
    ``config`` whose value is too short to be scrubbed from log lines (under :data:`MIN_SCRUBBED_LENGTH`
    characters, not empty), never the value; return those keys. ``keys`` are the connector's ``PASSWORD`` keys."""
    short = [
        k
        for k, v in config.items()
        if v is not None and is_secret(k, keys) and not only_references(v) and 0 < len(str(v)) < MIN_SCRUBBED_LENGTH
    ]
    if short:
        log.warning(
            "%s: the value of secret key %s is shorter than %d characters, too short to be hidden in log lines: it "
            "may appear in logs as it is (REST responses still show it as %s); use a longer secret",
            owner,
            ", ".join(sorted(short)),
            MIN_SCRUBBED_LENGTH,
            HIDDEN,
        )
    return short


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with every one of ``values`` replaced by ``[hidden]``, longest first."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    return text


def scrub_error(error: ConfigError, config: Mapping[str, Any]) -> ConfigError:
    """``error`` again with ``config``'s secret values hidden in its message (the same error when none shows)."""
    values = secret_values([config])
    message = scrub(str(error), values)
    if message == str(error):
        return error
    hidden = type(error).__new__(type(error))
    hidden.__dict__.update(error.__dict__)
    hidden.value = HIDDEN if str(error.value) in values else error.value
    errors = getattr(error, "errors", None)
    if isinstance(errors, dict):  # InvalidConfigError's messages by key
        hidden.__dict__["errors"] = {key: [scrub(m, values) for m in found] for key, found in errors.items()}
    hidden.args = (message,)
    return hidden


def restore_hidden(name: str, props: Mapping[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """``props`` with each secret key sent as ``[hidden]`` given its ``stored`` value back, so that a config read
    from the REST API can be written back as it is; a ``[hidden]`` with no stored value to keep is refused."""
    keys = password_keys(props) | password_keys(stored or {}, stored=True)
    restored = dict(props)
    for key, value in props.items():
        if value == HIDDEN and is_secret(key, keys):
            if stored is None or stored.get(key) is None:
                raise BadRequestError(
                    f"Connector {name}: {key} is {HIDDEN}, which keeps a stored value, but no value is stored for it"
                )
            restored[key] = stored[key]
    return restored
