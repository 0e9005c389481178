"""Kafka client settings a connector config may not set unless the worker allows them by name: those that make the
client load code, run a command, or read or write local files on the worker's host (librdkafka's
``plugin.library.paths`` dlopens any path it is given).

The rule holds for every key of a connector config whose name ends with such a setting, whatever comes before it:
``producer.override.plugin.library.paths``, the mirror's ``source.ssl.key.location`` and
``connector.consumer.plugin.library.paths``, any connector's own client prefix. So a connector that makes its own
clients is covered without its cooperation, and independently of the override policy
(:mod:`.override_policy`). The worker's own file, written by its administrator, sets them freely;
``connector.client.config.allowed.unsafe.keys`` lists the settings connector configs may set too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import has_reference

ALLOWED_UNSAFE = "connector.client.config.allowed.unsafe.keys"
"""The worker key listing the unsafe settings connector configs may set."""

_LOADS_CODE = "loads a shared library (code) into the worker"
_RUNS_COMMAND = "runs a shell command on the worker's host"
_READS_FILE = "reads a local file of the worker's host"
_WRITES_FILE = "writes local files on the worker's host"

UNSAFE_SETTINGS: Mapping[str, str] = {
    "plugin.library.paths": _LOADS_CODE,
    "ssl.engine.location": _LOADS_CODE,
    "ssl.providers": "loads OpenSSL provider modules (code) into the worker",
    "sasl.kerberos.kinit.cmd": _RUNS_COMMAND,
    "sasl.kerberos.keytab": _READS_FILE + " (and is put into the kinit shell command)",
    "sasl.kerberos.principal": "is put into the kinit shell command librdkafka runs on the worker's host",
    "ssl.key.location": _READS_FILE,
    "ssl.certificate.location": _READS_FILE,
    "ssl.ca.location": _READS_FILE,
    "ssl.crl.location": _READS_FILE,
    "ssl.keystore.location": _READS_FILE,
    "ssl.truststore.location": _READS_FILE,
    "ssl.ca.certificate.stores": "reads the worker host's certificate stores",
    "https.ca.location": _READS_FILE,
    "sasl.oauthbearer.assertion.file": _READS_FILE,
    "sasl.oauthbearer.assertion.private.key.file": _READS_FILE,
    "sasl.oauthbearer.assertion.jwt.template.file": _READS_FILE,
    "offset.store.path": _WRITES_FILE,
    "offset.store.method": _WRITES_FILE + " (offset.store.method=file)",
    "sasl.oauthbearer.token.endpoint.url": "reads a local file of the worker's host with a scheme other than http(s)",
}
"""Each unsafe client setting (librdkafka's name; ``ssl.truststore.location`` is Kafka's Java client's) with what
it does that a connector config must not ask for."""

SAFE_VALUES: Mapping[str, Callable[[str], bool]] = {
    "sasl.oauthbearer.token.endpoint.url": lambda value: value.lower().startswith(("http://", "https://")),
}
"""Unsafe settings that some values make safe: an OIDC token endpoint given as an ``http://`` or ``https://`` URL
(librdkafka fetches it with libcurl, which reads ``file://`` URLs too)."""


def _known_settings(key: str, value: Any) -> None:
    unknown = [item for item in value if item.strip().lower() not in UNSAFE_SETTINGS]
    if unknown:
        raise ConfigError(
            key, value, f"{', '.join(unknown)}: not an unsafe client setting (they are: {', '.join(UNSAFE_SETTINGS)})"
        )


UNSAFE_SETTINGS_CONFIG = ConfigDef().define(
    ALLOWED_UNSAFE,
    Type.LIST,
    "",
    Importance.MEDIUM,
    "Client settings that load code, run a command or read or write local files (plugin.library.paths, "
    "ssl.engine.location, ssl.providers, sasl.kerberos.kinit.cmd, sasl.kerberos.keytab, sasl.kerberos.principal, "
    "ssl.*.location, https.ca.location, ssl.ca.certificate.stores, the sasl.oauthbearer.assertion files, "
    "offset.store.path, offset.store.method, and sasl.oauthbearer.token.endpoint.url unless http:// or https://) "
    "that connector configs may set anyway, by name (ssl.ca.location, say). By default none: "
    "a connector config key ending in one of them (producer.override.plugin.library.paths, "
    "source.ssl.key.location) is refused whatever connector.client.config.override.policy says. This file may set "
    "them for the worker's own clients either way.",
    _known_settings,
)
"""The worker key of the allowance, merged into the worker's config definition."""


def unsafe_setting(name: str) -> str | None:
    """The unsafe client setting the connector config key ``name`` ends with, if any."""
    lowered = name.strip().lower()
    return next((s for s in UNSAFE_SETTINGS if lowered == s or lowered.endswith("." + s)), None)


def unsafe_errors(props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> dict[str, str]:
    """The keys of ``props``, a connector config, that set an unsafe client setting the worker does not allow,
    each with its message; ``worker_config`` is the worker's parsed config. A blank value asks for nothing."""
    allowed = {item.strip().lower() for item in worker_config.get(ALLOWED_UNSAFE) or ()}
    found: dict[str, str] = {}
    for name, value in props.items():
        setting = unsafe_setting(name)
        if setting is None or setting in allowed or _harmless(setting, value):
            continue
        found[name] = (
            f"{name}: the client setting {setting} {UNSAFE_SETTINGS[setting]}, so a connector config may not set "
            f"it; list {setting} in the worker's {ALLOWED_UNSAFE} to allow it"
        )
    return found


def _harmless(setting: str, value: Any) -> bool:
    """Whether ``value`` asks for nothing unsafe: blank, a value :data:`SAFE_VALUES` accepts, or a config provider
    reference to such a setting (checked once resolved, when the worker starts the connector)."""
    if value is None:
        return False
    text = str(value).strip()
    check = SAFE_VALUES.get(setting)
    return text == "" or (check is not None and (check(text) or has_reference(text)))
