"""Config providers (Kafka Connect's KIP-297): where ``${provider:path:key}`` references in connector configs
are resolved from, and the reference syntax itself.

A worker names its providers in ``config.providers``; each is a class the worker makes once (no arguments),
configures with its ``config.providers.<name>.param.*`` keys and closes when it stops. A provider installed as a
package registers its class under :data:`CONFIG_PROVIDER_ENTRY_POINT_GROUP`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

CONFIG_PROVIDER_ENTRY_POINT_GROUP = "headwater.config_providers"
"""Installed config providers register their classes under this entry-point group; the entry point's name is what
``config.providers.<name>.class`` may say."""

REFERENCE = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""A reference in a config value: ``${provider:path:key}``, or ``${provider:key}`` with an empty path (Kafka's
``ConfigTransformer.DEFAULT_PATTERN``). Group 1 is the provider, group 3 the path, group 4 the key."""


def has_reference(value: object) -> bool:
    """Whether ``value`` is a string holding at least one ``${provider:path:key}`` reference."""
    return isinstance(value, str) and REFERENCE.search(value) is not None


@runtime_checkable
class ConfigProvider(Protocol):
    """A source of config values: the worker calls :meth:`configure` once, :meth:`get` when a connector or task
    starts (on the thread starting it; several may call at once), and :meth:`close` when it stops."""

    def configure(self, params: Mapping[str, str]) -> None:
        """Take the provider's ``config.providers.<name>.param.*`` keys, without that prefix. Raise
        :class:`~headwater.sdk.ConfigError` for a bad one: the worker does not start."""

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        """The values of ``keys`` at ``path`` (``""`` when the reference has none). Leave out a key that has no
        value: the worker reports it, naming the config key and the reference. Raise
        :class:`~headwater.sdk.ConfigError` when ``path`` cannot be read or is not allowed; its message must not
        hold a secret value, since it becomes the connector's or task's failure trace."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`configure` acquired."""
