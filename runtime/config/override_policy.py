"""Which client overrides a connector config may set: the worker's ``connector.client.config.override.policy``
(Kafka Connect's KIP-458).

A connector's ``producer.override.*``, ``consumer.override.*`` and ``admin.override.*`` keys change the settings
of the Kafka clients the worker makes for its tasks (:mod:`~headwater.runtime.config.clients`). The policy says which:

- ``None``: no override at all;
- ``Principal``: only the settings that say who the client is (:data:`PRINCIPAL_SETTINGS`): Kafka Connect's
  ``sasl.jaas.config``, ``sasl.mechanism`` and ``security.protocol``, and librdkafka's own spellings of the same
  (``sasl.mechanisms``, ``sasl.username``, ``sasl.password``), since the worker's clients are librdkafka's;
- ``All`` (the default, as in Kafka Connect 3.0 and later): any override.

Kafka Connect's class names for the three policies (full or short) are accepted as aliases, so that a Kafka Connect
worker file works as it is. Whatever the policy, a setting that loads code or reads local files is refused unless
the worker allows it (:mod:`~headwater.runtime.config.unsafe_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.config.clients import override_prefix
from headwater.runtime.config.unsafe_settings import UNSAFE_SETTINGS_CONFIG, unsafe_errors
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError

OVERRIDE_POLICY = "connector.client.config.override.policy"
"""The worker key naming the policy."""

NONE, PRINCIPAL, ALL = "None", "Principal", "All"
POLICIES = (NONE, PRINCIPAL, ALL)

OVERRIDE_CLIENTS = ("producer", "consumer", "admin")
"""The clients a connector config may name an override for (``producer.override.``, ...)."""

PRINCIPAL_SETTINGS = frozenset(
    {"sasl.jaas.config", "sasl.mechanism", "security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password"}
)
"""The client settings the ``Principal`` policy lets a connector override."""

_JAVA_PACKAGE = "org.apache.kafka.connect.connector.policy."
_JAVA_SUFFIX = "ConnectorClientConfigOverridePolicy"


def _aliases() -> dict[str, str]:
    """Every accepted spelling of a policy, lower case, to the policy's name."""
    found: dict[str, str] = {}
    for name in POLICIES:
        for alias in (name, name + _JAVA_SUFFIX, _JAVA_PACKAGE + name + _JAVA_SUFFIX):
            found[alias.lower()] = name
    return found


_ALIASES = _aliases()


def policy_name(value: Any) -> str:
    """The policy (``None``, ``Principal`` or ``All``) a value of :data:`OVERRIDE_POLICY` names; raises
    :class:`ConfigError` naming the key for any other value."""
    name = _ALIASES.get(str(value).strip().lower())
    if name is None:
        raise ConfigError(
            OVERRIDE_POLICY,
            value,
            f"Expected one of {', '.join(POLICIES)} or Kafka Connect's class name of one "
            f"({_JAVA_PACKAGE}NoneConnectorClientConfigOverridePolicy, say)",
        )
    return name


def _policy(key: str, value: Any) -> None:
    policy_name(value)


OVERRIDE_POLICY_CONFIG = ConfigDef().define(
    OVERRIDE_POLICY,
    Type.STRING,
    ALL,
    Importance.MEDIUM,
    "Which producer.override.*, consumer.override.* and admin.override.* keys a connector config may set "
    "(KIP-458): None allows none; Principal allows only the client's identity (sasl.jaas.config, sasl.mechanism, "
    "security.protocol and librdkafka's sasl.mechanisms, sasl.username, sasl.password); All allows any. Kafka "
    "Connect's policy class names (full or short) are accepted too. Settings that load code or read local files "
    "are refused whatever this says (see connector.client.config.allowed.unsafe.keys).",
    _policy,
)
"""The worker key of the policy."""

CLIENT_SETTINGS_CONFIG = OVERRIDE_POLICY_CONFIG.merge(UNSAFE_SETTINGS_CONFIG)
"""The worker keys that say which client settings connector configs may set, merged into the worker's config
definition."""


def override_errors(props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> dict[str, str]:
    """The client override keys of ``props``, a connector config, that the worker's policy does not allow, each
    with its message; ``worker_config`` is the worker's parsed config."""
    policy = policy_name(worker_config.get(OVERRIDE_POLICY, ALL))
    if policy == ALL:
        return {}
    found: dict[str, str] = {}
    for name in props:
        prefix = next((override_prefix(c) for c in OVERRIDE_CLIENTS if name.startswith(override_prefix(c))), None)
        if prefix is None:
            continue
        setting = name[len(prefix) :]
        if policy == PRINCIPAL and setting in PRINCIPAL_SETTINGS:
            continue
        allowed = ", ".join(sorted(PRINCIPAL_SETTINGS)) if policy == PRINCIPAL else "no override"
        found[name] = (
            f"{name}: The '{policy}' policy does not allow '{setting}' to be overridden in the connector "
            f"configuration; the worker's {OVERRIDE_POLICY} allows {allowed} (remove the key, or set the worker's "
            f"policy to All)"
        )
    return found


def client_refusals(props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every key of ``props``, a connector config, that sets a client setting the worker does not let connectors
    set, with its messages: an override the policy does not allow, a setting that loads code or reads local files
    (:func:`~headwater.runtime.config.unsafe_settings.unsafe_errors`). Checked when a config is validated, created or
    changed, and again when the worker starts a connector or task from a stored config."""
    found: dict[str, list[str]] = {}
    for errors in (override_errors(props, worker_config), unsafe_errors(props, worker_config)):
        for key, message in errors.items():
            found.setdefault(key, []).append(message)
    return found


def check_client_settings(props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming every key :func:`client_refusals` finds in ``props``."""
    refused = client_refusals(props, worker_config)
    if refused:
        key = sorted(refused)[0]
        error = ConfigError(key, None, "; ".join(m for name in sorted(refused) for m in refused[name]))
        error.args = (error.reason,)
        raise error
