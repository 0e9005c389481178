"""Resolving ``${provider:path:key}`` references in connector and task configs (Kafka Connect's
``WorkerConfigTransformer``), when a connector or task starts.

Configs are stored and served as written, references and all; only the config a connector or task is started with
holds the values. A reference that cannot be resolved (a provider not in ``config.providers``, a missing file, a
missing key, a path outside ``allowed.paths``) raises a :class:`~headwater.sdk.ConfigError` naming the config key
and the reference, never a resolved value. Unlike Kafka Connect, which leaves such a reference in the value as it
is, the connector or task fails with that error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.config.properties import ConfigFile, PropertiesError
from headwater.runtime.config.providers import PREFIX, load_providers
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import REFERENCE, ConfigProvider


class ConfigTransformer:
    """The worker's config providers by name, and how configs are resolved with them."""

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None) -> None:
        self.providers = dict(providers or {})

    @classmethod
    def from_worker_config(cls, config: Mapping[str, Any]) -> ConfigTransformer:
        """The providers a (parsed) worker config names in ``config.providers``."""
        return cls(load_providers(config))

    def transform(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """``props`` with every reference in a string value replaced by its value; other values as they are."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for key, value in props.items():
            for match in REFERENCE.finditer(value) if isinstance(value, str) else ():
                if match[1] not in self.providers:
                    configured = ", ".join(sorted(self.providers)) or "none"
                    reason = f"{match[0]} names config provider {match[1]!r}, which config.providers does not list "
                    raise ConfigError(key, value, reason + f"(configured: {configured})")
                wanted.setdefault((match[1], match[3] or ""), set()).add(match[4])
        if not wanted:
            return dict(props)
        fetched: dict[tuple[str, str], Mapping[str, str] | Exception] = {}
        for (name, path), keys in wanted.items():
            try:
                fetched[name, path] = self.providers[name].get(path, set(keys))
            except Exception as error:  # reported against the first key that needs it, below
                fetched[name, path] = error
        return {key: self._replace(key, value, fetched) for key, value in props.items()}

    @staticmethod
    def _replace(key: str, value: Any, fetched: Mapping[tuple[str, str], Mapping[str, str] | Exception]) -> Any:
        if not isinstance(value, str):
            return value
        parts: list[str] = []
        end = 0
        for match in REFERENCE.finditer(value):
            data = fetched[match[1], match[3] or ""]
            if isinstance(data, Exception):
                raise ConfigError(key, value, f"cannot resolve {match[0]}: {data}")
            if match[4] not in data:
                where = f" at {match[3]}" if match[3] else ""
                raise ConfigError(key, value, f"cannot resolve {match[0]}: no key {match[4]!r}{where}")
            parts += [value[end : match.start()], str(data[match[4]])]
            end = match.end()
        return "".join(parts) + value[end:]

    def close(self) -> None:
        """Close every provider."""
        for provider in self.providers.values():
            provider.close()


def references(raw: Mapping[str, Any], resolved: Mapping[str, Any]) -> dict[str, str]:
    """Each non-empty resolved value of a key whose raw value held a reference, mapped to that raw value."""
    return {
        str(resolved[key]): value
        for key, value in raw.items()
        if isinstance(value, str) and REFERENCE.search(value) and resolved.get(key) not in ("", None)
    }


def restore_references(task_config: Mapping[str, str], found: Mapping[str, str]) -> dict[str, str]:
    """A task config with every value that is a whole resolved value of its connector's config (``found``, from
    :func:`references`) put back as the reference text it was resolved from, so that the stored task config holds
    the reference, not the secret, and the task resolves it when it starts."""
    return {key: found.get(value, value) for key, value in task_config.items()}


def hide_values(error: ConfigError, found: Mapping[str, str]) -> ConfigError:
    """``error``, raised for a resolved config, with each resolved value of ``found`` (from :func:`references`)
    shown as the reference text it came from: quoted, or bare when it is 4 characters or longer (a shorter one
    would replace unrelated words of the message)."""

    def hide(text: str) -> str:
        for value, reference in sorted(found.items(), key=lambda item: -len(item[0])):
            text = text.replace(repr(value), repr(reference))
            text = text.replace(value, reference) if len(value) >= 4 else text
        return text

    hidden = ConfigError(error.key, found.get(str(error.value)), hide(error.reason))
    hidden.args = (hide(str(error)),)
    return hidden


def resolve_worker_file(file: ConfigFile) -> ConfigFile:
    """The worker config file with the references in its values resolved by the providers it configures itself,
    as Kafka Connect resolves its worker config; the ``config.providers`` keys stay as written. Raises
    :class:`~.properties.PropertiesError` naming the file, line and key for a bad provider setting
    or a reference that cannot be resolved."""
    own = {k: v for k, v in file.values.items() if k == "config.providers" or k.startswith(PREFIX)}
    rest = {k: v for k, v in file.values.items() if k not in own}
    if not own.get("config.providers") and not any(REFERENCE.search(value) for value in rest.values()):
        return file
    try:
        own_config = {
            **own,
            "config.providers": WORKER_CONFIG.keys["config.providers"].parse(own.get("config.providers", "")),
        }
        transformer = ConfigTransformer.from_worker_config(own_config)
        try:
            resolved = transformer.transform(rest)
        finally:
            transformer.close()
    except ConfigError as error:
        found = file.config_error(error)
        if found.line is None and error.key.startswith(PREFIX):  # a provider's class missing: where it is listed
            found = PropertiesError(file.path, found.problem, found.key, file.lines.get("config.providers"))
        raise found from None
    return ConfigFile(file.path, {**resolved, **own}, file.lines, file.initial_state)
